// What the core knows about a plugin without initialising it (from a probe subprocess).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commbench/backend.h"
#include "common/diagnostic.h"
#include "plugin/option_descriptors.h"

namespace commbench {

struct PluginInfo {
  std::string name;
  std::string path;
  std::string version;
  std::string description;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  cb_capabilities caps{};  // static capabilities
  // The options it accepts (ABI 1.2 descriptors); nullopt: it does not describe them.
  std::optional<std::vector<PluginOption>> options;
  std::vector<std::string> option_problems;  // malformed descriptors (conformance fails on them)
  std::string load_error;  // non-empty: the plugin could not be loaded or probed; says why
  // What its entry function and get_capabilities(NULL) did beyond answering, which the ABI asks
  // them not to do (docs/plugin-abi.md §1; conformance fails it): what they printed (stdout or
  // stderr, printable, cut at 4 KiB) and the threads they left running. The same for loading the
  // library (its constructors and its dependencies'), which conformance only reports.
  std::string entry_output;
  int entry_threads = 0;
  std::string library_output;
  int library_threads = 0;

  bool ok() const { return load_error.empty(); }
};

nlohmann::json to_json(const PluginInfo& p);
PluginInfo plugin_info_from_json(const nlohmann::json& j);

// name -> info for every plugin found on the search path (first match of a name wins).
using PluginCatalog = std::map<std::string, PluginInfo>;

// The struct_size this build gives a cb_capabilities: CB_STRUCT_SIZE of its last field, as the
// ABI requires (never sizeof, which may include tail padding a later field would occupy).
inline constexpr size_t kCapabilitiesStructSize = CB_STRUCT_SIZE(cb_capabilities, flags);

}  // namespace commbench
