// A plugin's option descriptors (ABI 1.2), read from its function table in the probe and carried
// as data from there on: `validate` checks an experiment's options by them, `plugins NAME` lists
// them, `conformance` checks they are well-formed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commbench/backend.h"

namespace commbench {

struct PluginOption {
  std::string name;
  cb_option_type type = CB_OPTION_STRING;
  std::string default_value;  // "" = no fixed default
  std::string doc;
  std::vector<std::string> choices;  // CB_OPTION_CHOICE
  int64_t min = 0, max = 0;          // CB_OPTION_INT

  // "" when `text` is a valid value, else what a valid one looks like (the SDK's rules:
  // sdk/option_values.hpp, so the core accepts exactly what the plugin will).
  std::string check_value(const std::string& text) const;
};

struct OptionDescriptors {
  // nullopt: the plugin does not describe its options (a table older than 1.2, or NULL).
  std::optional<std::vector<PluginOption>> options;
  // What is malformed in the descriptors (empty when well-formed); only well-formed ones are
  // in `options`.
  std::vector<std::string> problems;
};

// Reads the descriptors of a table adopted by the loader (fields past its struct_size are zero).
OptionDescriptors read_option_descriptors(const cb_backend_api& api);

nlohmann::json to_json(const PluginOption& o);
PluginOption plugin_option_from_json(const nlohmann::json& j);

}  // namespace commbench
