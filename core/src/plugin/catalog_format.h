// What `commbench plugins` prints: human text, or JSON with --json.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "plugin/probe.h"

namespace commbench {

// Per plugin: name, version, ABI version, path, description, capability lists by name
// (ops, dtypes, reduce dtypes, reduce ops, memory types, flags) or the load error; then the
// shadowed files, the misnamed ones and the entries named like plugins that are not files (never
// loaded), and the search path with the reason each
// directory is on it.
std::string format_plugin_listing(const PluginListing& listing);

// `commbench plugins NAME`: each option with its type (choices, int range), default and doc; or
// that the plugin does not describe them.
std::string format_plugin_options(const PluginInfo& plugin);

// {"search_path": [{"path", "origin"}...], "plugins": [to_json(PluginInfo)...] (name order),
//  "shadowed": [{"name", "path", "shadowed_by"}...], "misnamed": [path...],
//  "not_files": [{"path", "why"}...]}
nlohmann::json plugin_listing_json(const PluginListing& listing);

// For a caller that already holds a catalog (discover_plugins): the shadowed files are found
// again by scanning `search_path` (cheap: no probing). json = true gives the JSON, indented.
std::string format_plugin_listing(const PluginCatalog& catalog, const std::vector<SearchDir>& search_path,
                                  bool json);

}  // namespace commbench
