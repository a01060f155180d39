// Reading a backend's options (the experiment's [run.options.<backend>] table, handed to init()
// as key/value strings) with errors that name the key, the value and what is accepted.
// Header-only plugin SDK.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "commbench/backend.h"
#include "commbench/sdk/option_values.hpp"
#include "commbench/sdk/plugin_error.hpp"

namespace commbench::sdk {

inline std::string comma_list(std::initializer_list<std::string_view> items) {
  std::string out;
  for (std::string_view item : items) {
    if (!out.empty()) out += ", ";
    out += item;
  }
  return out;
}

[[noreturn]] inline void bad_option_value(std::string_view key, std::string_view value,
                                          std::string_view expected) {
  fail(CB_ERR_INVALID_ARGUMENT, "option " + std::string(key) + " = \"" + std::string(value) +
                                    "\" is not valid; expected " + std::string(expected));
}

[[noreturn]] inline void unknown_option(std::string_view backend, std::string_view key,
                                        std::initializer_list<std::string_view> valid) {
  fail(CB_ERR_INVALID_ARGUMENT, "unknown option '" + std::string(key) + "' for backend " +
                                    std::string(backend) + "; valid options are: " +
                                    comma_list(valid));
}

// Calls visit(key, value) for every option, after checking each one is well-formed (the
// struct_size rule of the ABI: read only the fields the host's cb_option has).
template <class Visit>
void for_each_option(const cb_option* options, size_t count, Visit&& visit) {
  for (size_t i = 0; i < count; ++i) {
    const cb_option& option = options[i];
    if (option.struct_size < CB_STRUCT_SIZE(cb_option, value) || option.key == nullptr ||
        option.value == nullptr)
      fail(CB_ERR_INVALID_ARGUMENT,
           "option #" + std::to_string(i) + " is malformed (null key or value)");
    visit(std::string_view(option.key), std::string_view(option.value));
  }
}

// A whole decimal integer in [min, max], e.g. a timeout in milliseconds.
inline int64_t parse_integer_option(std::string_view key, std::string_view value, int64_t min,
                                    int64_t max, std::string_view expected) {
  const auto v = read_integer_text(value);
  if (!v || *v < min || *v > max) bad_option_value(key, value, expected);
  return *v;
}

// "on"/"off" (also true/false, 1/0, yes/no).
inline bool parse_bool_option(std::string_view key, std::string_view value) {
  const auto v = read_bool_text(value);
  if (!v) bad_option_value(key, value, "on or off");
  return *v;
}

// A byte count: a whole number with an optional binary suffix B, KiB, MiB, GiB ("8KiB").
inline uint64_t parse_bytes_option(std::string_view key, std::string_view value) {
  const auto v = read_bytes_text(value);
  if (!v) bad_option_value(key, value, "a byte count such as \"8192\", \"8KiB\" or \"1MiB\"");
  return *v;
}

}  // namespace commbench::sdk
