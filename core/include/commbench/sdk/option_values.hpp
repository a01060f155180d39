// Reading one option's text by the type its descriptor (ABI 1.2 cb_option_descriptor) gives it.
// Shared by plugins (sdk/option_table.hpp parses with it) and by the core (`commbench validate`
// checks an experiment's options with it), so both accept exactly the same texts. Never throws.
// Header-only plugin SDK.
#pragma once

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "commbench/backend.h"

namespace commbench::sdk {

// One option's value, read by its descriptor's type (only the member of that type is set).
struct OptionValue {
  std::string_view key;
  std::string_view text;
  int64_t integer = 0;   // CB_OPTION_INT
  bool boolean = false;  // CB_OPTION_BOOL
  uint64_t bytes = 0;    // CB_OPTION_BYTES
  size_t choice = 0;     // CB_OPTION_CHOICE: the index in the descriptor's choices
};

inline std::string_view option_type_name(cb_option_type type) {
  switch (type) {
    case CB_OPTION_STRING: return "string";
    case CB_OPTION_INT: return "int";
    case CB_OPTION_BOOL: return "bool";
    case CB_OPTION_BYTES: return "bytes";
    case CB_OPTION_CHOICE: return "choice";
    default: return "?";
  }
}

inline std::optional<int64_t> read_integer_text(std::string_view text) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// "on"/"off" (also true/false, 1/0, yes/no).
inline std::optional<bool> read_bool_text(std::string_view text) {
  for (std::string_view t : {"on", "true", "1", "yes"})
    if (text == t) return true;
  for (std::string_view f : {"off", "false", "0", "no"})
    if (text == f) return false;
  return std::nullopt;
}

// A whole number with an optional binary suffix B, KiB, MiB, GiB ("8KiB").
inline std::optional<uint64_t> read_bytes_text(std::string_view text) {
  uint64_t v = 0;
  const char* begin = text.data();
  const char* stop = begin + text.size();
  const auto [end, ec] = std::from_chars(begin, stop, v);
  const std::string_view suffix(end, static_cast<size_t>(stop - end));
  uint64_t scale = 0;
  if (suffix.empty() || suffix == "B") scale = 1;
  else if (suffix == "KiB") scale = uint64_t{1} << 10;
  else if (suffix == "MiB") scale = uint64_t{1} << 20;
  else if (suffix == "GiB") scale = uint64_t{1} << 30;
  if (ec != std::errc() || end == begin || scale == 0 || v > UINT64_MAX / scale) return std::nullopt;
  return v * scale;
}

// The descriptor's choices as "a, b, c" (empty when it has none).
inline std::string option_choices_text(const cb_option_descriptor& d) {
  std::string out;
  for (const char* const* c = d.choices; c != nullptr && *c != nullptr; ++c) out.append(out.empty() ? "" : ", ").append(*c);
  return out;
}

// What a valid value of `d` looks like, for messages ("one of ring, bcube").
inline std::string option_expectation(const cb_option_descriptor& d) {
  switch (d.type) {
    case CB_OPTION_INT:
      return "a whole number from " + std::to_string(d.min) + " to " + std::to_string(d.max);
    case CB_OPTION_BOOL: return "on or off (also true/false, yes/no, 1/0)";
    case CB_OPTION_BYTES: return "a byte count such as \"8192\", \"8KiB\" or \"1MiB\"";
    case CB_OPTION_CHOICE: return "one of " + option_choices_text(d);
    default: return "text";
  }
}

// Reads `text` as `d` says into `out`; false when it is not a valid value of that type.
inline bool read_option_value(const cb_option_descriptor& d, std::string_view text, OptionValue& out) {
  out.text = text;
  switch (d.type) {
    case CB_OPTION_STRING: return true;
    case CB_OPTION_INT: {
      const auto v = read_integer_text(text);
      if (!v || *v < d.min || *v > d.max) return false;
      out.integer = *v;
      return true;
    }
    case CB_OPTION_BOOL: {
      const auto v = read_bool_text(text);
      if (v) out.boolean = *v;
      return v.has_value();
    }
    case CB_OPTION_BYTES: {
      const auto v = read_bytes_text(text);
      if (v) out.bytes = *v;
      return v.has_value();
    }
    case CB_OPTION_CHOICE:
      for (size_t i = 0; d.choices != nullptr && d.choices[i] != nullptr; ++i)
        if (text == d.choices[i]) {
          out.choice = i;
          return true;
        }
      return false;
    default: return false;
  }
}

}  // namespace commbench::sdk
