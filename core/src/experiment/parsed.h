// The outcome of parsing one piece of user text: a value, or a message saying what was expected.
// Kept tiny on purpose: the callers attach the message to a file position.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace commbench {

template <class T>
struct Parsed {
  std::optional<T> value;
  std::string error;  // set when `value` is empty

  static Parsed ok(T v) { return Parsed{std::move(v), {}}; }
  static Parsed fail(std::string message) { return Parsed{std::nullopt, std::move(message)}; }
  explicit operator bool() const { return value.has_value(); }
};

}  // namespace commbench
