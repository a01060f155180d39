// Loading one backend plugin into the WORKER process (the agent never loads plugins: it probes
// them in a subprocess, see plugin/probe.h). docs/plugin-abi.md describes the checks made here.
#pragma once

#include <optional>
#include <stdexcept>
#include <functional>
#include <string>

#include "commbench/backend.h"
#include "plugin/plugin_error.h"

namespace commbench {

// The plugin could not be loaded or its table is unusable. The message names the file and says
// what to do (rebuild, install a missing library, ...).
class PluginLoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct LoadedPlugin {
  std::string path;  // the file that was loaded
  // The plugin's function table copied into a zeroed table of this build's size: fields beyond
  // the plugin's struct_size (a plugin built against an older minor) read as NULL/0.
  // api.struct_size keeps the size the plugin reported.
  cb_backend_api api{};

  std::string name() const { return api.name; }
};

// dlopen (RTLD_NOW | RTLD_LOCAL) through Boost.DLL, call CB_ENTRY_SYMBOL, validate and copy the
// table (adopt_api_table). The library is never unloaded: it stays mapped until the process
// exits, because unloading a communication library during static destruction crashes (torchcomms
// learned this) and a worker lives for one run anyway. Throws PluginLoadError.
// Refuses (before dlopen, which runs its constructors) a file that unsafe_plugin_file names.
LoadedPlugin load_plugin(const std::string& path);
// The same, calling `library_loaded` between loading the library (its constructors and its
// dependencies' ran) and calling its entry function: the probe tells the two apart.
LoadedPlugin load_plugin(const std::string& path, const std::function<void()>& library_loaded);

// Why loading `path` would run code that someone else may have written, or nullopt. Checked on
// the file a link leads to and every folder above it, up to /: each must belong to this user,
// root or the owner of the commbench executable (who installed it), the file must not be
// writable by every user, nor a folder unless it has the sticky bit (/tmp).
std::optional<std::string> unsafe_plugin_file(const std::string& path);

// The validation step of load_plugin, separate so it can be tested without building libraries:
// checks the ABI major, copies min(table->struct_size, sizeof(cb_backend_api)) bytes into a zeroed
// table, and checks every mandatory function and the name are present. `path` is for messages.
// Throws PluginLoadError.
cb_backend_api adopt_api_table(const cb_backend_api* table, const std::string& path);

}  // namespace commbench
