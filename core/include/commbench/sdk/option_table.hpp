// A plugin's options defined once, as a table: each row names an option, its type, default and
// one-line doc, and how its value lands in the plugin's parsed-options struct. From the one table
// come both the parsing in init() (apply_options) and the ABI 1.2 descriptor array that lets
// `commbench validate` check an experiment's options before anything runs (describe_options;
// EntryPoints<Traits>::table exports it when Traits has `options`). Header-only plugin SDK.
//
//   inline constexpr const char* kModes[] = {"fast", "safe", nullptr};
//   inline constexpr sdk::OptionDef<MyOptions> kMyOptions[] = {
//       {"mode", CB_OPTION_CHOICE, "fast", "how to run",
//        [](MyOptions& o, const sdk::OptionValue& v) { o.safe = v.choice == 1; }, kModes},
//       {.name = "timeout_ms", .type = CB_OPTION_INT, .default_value = "60000", .doc = "every wait",
//        .apply = [](MyOptions& o, const sdk::OptionValue& v) { o.timeout_ms = v.integer; },
//        .min = 1, .max = INT32_MAX},
//   };
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "commbench/backend.h"
#include "commbench/sdk/option_values.hpp"
#include "commbench/sdk/plugin_options.hpp"

namespace commbench::sdk {

template <class Parsed>
struct OptionDef {
  const char* name;
  cb_option_type type;
  const char* default_value;  // in the type's syntax; "" = no fixed default (the doc says what)
  const char* doc;            // one line
  void (*apply)(Parsed&, const OptionValue&);  // called with a value already valid for `type`
  const char* const* choices = nullptr;        // CB_OPTION_CHOICE: NULL-terminated
  int64_t min = 0;                             // CB_OPTION_INT: inclusive range
  int64_t max = 0;

  constexpr cb_option_descriptor descriptor() const {
    return cb_option_descriptor{
        .struct_size = CB_STRUCT_SIZE(cb_option_descriptor, max),
        .name = name,
        .type = type,
        .default_value = default_value,
        .doc = doc,
        .choices = choices,
        .min = min,
        .max = max,
    };
  }
};

// The ABI descriptors of a table, in its order (a constant: the entry table points at it).
template <class Parsed, size_t N>
constexpr std::array<cb_option_descriptor, N> describe_options(const OptionDef<Parsed> (&defs)[N]) {
  std::array<cb_option_descriptor, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = defs[i].descriptor();
  return out;
}

template <class Parsed, size_t N>
constexpr std::array<cb_option_descriptor, N> describe_options(const std::array<OptionDef<Parsed>, N>& defs) {
  std::array<cb_option_descriptor, N> out{};
  for (size_t i = 0; i < N; ++i) out[i] = defs[i].descriptor();
  return out;
}

// A table with one more row: for a plugin that takes another's options plus its own.
template <class Parsed, size_t N>
constexpr std::array<OptionDef<Parsed>, N + 1> with_option(const OptionDef<Parsed> (&defs)[N], OptionDef<Parsed> extra) {
  std::array<OptionDef<Parsed>, N + 1> out{};
  for (size_t i = 0; i < N; ++i) out[i] = defs[i];
  out[N] = extra;
  return out;
}

// Parses the host's options into `out` by the table: an unknown key or a value that is not valid
// for its row's type throws PluginError(CB_ERR_INVALID_ARGUMENT) naming the key, the value and
// what is accepted. Checks that involve several options stay with the caller, after this.
template <class Parsed>
void apply_options(std::span<const OptionDef<Parsed>> defs, std::string_view plugin, const cb_option* options,
                   size_t count, Parsed& out) {
  for_each_option(options, count, [&](std::string_view key, std::string_view value) {
    const OptionDef<Parsed>* def = nullptr;
    for (const auto& d : defs)
      if (key == d.name) def = &d;
    if (def == nullptr) {
      std::string names;
      for (const auto& d : defs) names.append(names.empty() ? "" : ", ").append(d.name);
      fail(CB_ERR_INVALID_ARGUMENT, "unknown option '" + std::string(key) + "' for backend " + std::string(plugin) +
                                        "; valid options are: " + names);
    }
    const cb_option_descriptor d = def->descriptor();
    OptionValue v;
    v.key = key;
    if (!read_option_value(d, value, v)) bad_option_value(key, value, option_expectation(d));
    def->apply(out, v);
  });
}

}  // namespace commbench::sdk
