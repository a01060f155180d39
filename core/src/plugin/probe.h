// Listing and validating plugins without loading them into the calling process.
//
// The agent never loads a plugin (docs/design: process model): a plugin may clash with another
// one's symbols, initialise CUDA before a fork, or crash while loading. So each candidate file is
// loaded by a short-lived subprocess, `commbench __probe PATH`, which prints what it found as one
// JSON object on stdout. A probe that crashes or hangs yields an entry with load_error set: a
// broken plugin never breaks the listing.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "plugin/plugin_info.h"
#include "plugin/search_path.h"

namespace commbench {

// Exit codes of the probe subcommand.
inline constexpr int kProbeExitOk = 0;
inline constexpr int kProbeExitLoadError = 3;

inline constexpr std::chrono::milliseconds kDefaultProbeTimeout{10000};

// Body of the hidden CLI subcommand `commbench __probe PATH`: loads the plugin, reads its static
// capabilities (get_capabilities(NULL): no init, no hardware) and prints to_json(PluginInfo) on
// stdout; exit kProbeExitOk. On failure prints {"load_error": "..."} and returns kProbeExitLoadError.
// Anything the plugin itself writes to stdout is sent to stderr, so stdout carries only the JSON.
int run_probe(const std::string& path);

// Probes one file with `self_exe __probe path`. Never throws for a bad plugin.
PluginInfo probe_plugin(const std::string& path, const std::string& self_exe,
                        std::chrono::milliseconds timeout = kDefaultProbeTimeout);

// Everything `commbench plugins` shows.
struct PluginListing {
  std::vector<SearchDir> search_path;
  PluginCatalog plugins;                // by name, first match on the search path
  std::vector<PluginScan::Shadowed> shadowed;
};

// Scans `search_path` and probes every plugin found (each in its own subprocess).
PluginListing list_plugins(const std::vector<SearchDir>& search_path, const std::string& self_exe,
                           std::chrono::milliseconds timeout = kDefaultProbeTimeout);

// The catalog alone, for validation: the first file of each name in `dirs`, probed.
PluginCatalog discover_plugins(const std::vector<std::string>& dirs, const std::string& self_exe);

}  // namespace commbench
