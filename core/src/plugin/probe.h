// Listing and validating plugins without loading them into the calling process.
//
// The agent never loads a plugin (docs/design: process model): a plugin may clash with another
// one's symbols, initialise CUDA before a fork, or crash while loading. So each candidate file is
// loaded by a short-lived subprocess, `commbench __probe PATH`, which prints what it found as one
// JSON object on stdout. A probe that crashes or hangs yields an entry with load_error set: a
// broken plugin never breaks the listing.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plugin/plugin_info.h"
#include "plugin/search_path.h"

namespace commbench {

// Exit codes of the probe subcommand.
inline constexpr int kProbeExitOk = 0;
inline constexpr int kProbeExitLoadError = 3;

// For the plugins a run names (they must load for the run to go on).
inline constexpr std::chrono::milliseconds kDefaultProbeTimeout{10000};
// For `commbench plugins`, which probes everything on the search path at once: a plugin that
// takes longer to load and describe itself is reported as not answering.
inline constexpr std::chrono::milliseconds kListingProbeTimeout{5000};

// Body of the hidden CLI subcommand `commbench __probe PATH`: loads the plugin, reads its static
// capabilities (get_capabilities(NULL): no init, no hardware) and prints to_json(PluginInfo) on
// stdout; exit kProbeExitOk. On failure prints {"load_error": "..."} and returns kProbeExitLoadError.
// Anything the plugin itself writes to stdout is sent to stderr, so stdout carries only the JSON.
int run_probe(const std::string& path);

// Probes one file with `self_exe __probe path`, with `env` on top of this process's environment
// (a run's `env` table: the workers load the plugin with it). Never throws for a bad plugin.
PluginInfo probe_plugin(const std::string& path, const std::string& self_exe,
                        std::chrono::milliseconds timeout = kDefaultProbeTimeout,
                        const std::map<std::string, std::string>& env = {});

// Everything `commbench plugins` shows.
struct PluginListing {
  std::vector<SearchDir> search_path;
  PluginCatalog plugins;                // by name, first match on the search path
  std::vector<PluginScan::Shadowed> shadowed;
  std::vector<std::string> misnamed;  // PluginScan::misnamed
  std::vector<PluginScan::NotAFile> not_files;
};

// Scans `search_path` and probes every plugin found (each in its own subprocess, all at once).
// With `only`, just the file of that name is probed and listed (`commbench plugins NAME`): a
// plugin that hangs elsewhere on the path costs nothing; the listing is empty when none is named so.
PluginListing list_plugins(const std::vector<SearchDir>& search_path, const std::string& self_exe,
                           std::chrono::milliseconds timeout = kListingProbeTimeout,
                           const std::optional<std::string>& only = std::nullopt);

// The catalog for validating and running an experiment: the first file of each name in `dirs`.
// Only the names in `only` (the backends the experiment uses; nullopt: all) are probed, in
// parallel; the others are listed by name with a load_error saying they were not probed, so a
// hanging or broken plugin that no run uses costs nothing. `env`: per backend name, the
// environment its probe gets on top of this process's (the `env` of the first run using it, so
// that a library found through LD_LIBRARY_PATH there is found by the probe too).
PluginCatalog discover_plugins(const std::vector<std::string>& dirs, const std::string& self_exe,
                               const std::optional<std::set<std::string>>& only = std::nullopt,
                               std::chrono::milliseconds timeout = kDefaultProbeTimeout,
                               const std::map<std::string, std::map<std::string, std::string>>& env = {});

}  // namespace commbench
