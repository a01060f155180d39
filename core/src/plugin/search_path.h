// Where plugins are looked for, and which file provides which backend name.
//
// Order (first match of a name wins; later files of the same name are listed as shadowed):
//   1. extra directories given by the caller (experiment's plugin_path, then --plugin-path)
//   2. COMMBENCH_PLUGIN_PATH (colon-separated)
//   3. next to the binary: <exe dir>/../<COMMBENCH_PLUGIN_SUBDIR>, then <exe dir>/plugins
//   4. the install directory (COMMBENCH_INSTALL_PLUGIN_DIR, fixed at configure time)
// The build tree mirrors the install tree, so 3 finds the plugins both in a build and installed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace commbench {

struct SearchDir {
  std::string path;    // absolute, normalised
  std::string origin;  // why it is searched, for `commbench plugins`: "COMMBENCH_PLUGIN_PATH", ...
};

// Everything the search path depends on, so tests can build one without touching the process.
struct SearchPathInputs {
  std::vector<std::string> extra_dirs;
  std::string env_plugin_path;  // value of COMMBENCH_PLUGIN_PATH ("" = unset)
  std::string exe_path;         // this binary ("" = unknown: skip the next-to-binary dirs)
  std::string install_dir;      // "" = none
};

// The ordered list; duplicates (same directory reached twice) are kept once, at the first place.
std::vector<SearchDir> build_search_path(const SearchPathInputs& in);

// build_search_path with this process's environment, executable and install directory.
std::vector<SearchDir> default_search_path(const std::vector<std::string>& extra_dirs);

// Absolute path of the running executable (/proc/self/exe); "" if it cannot be read.
std::string current_executable_path();

// Why a misnamed plugin file is not loaded (`plugins`; `conformance` fails such a file).
inline constexpr const char* kMisnamedWhy =
    "a plugin file must be named libcommbench_backend_<name>.so, <name> of letters, digits, '_' and '-'";

// Why an entry named like a plugin that is not a file (a directory, a dangling link) is not loaded.
inline constexpr const char* kNotAFileWhy =
    "named like a plugin, but not a file a run can load: replace it with the plugin's .so file, or remove it";

// "libcommbench_backend_<name>.so" <-> name. A name is [A-Za-z0-9_-]+.
std::string plugin_file_name(std::string_view name);
std::optional<std::string> plugin_name_from_file(std::string_view file_name);

struct PluginFile {
  std::string name;  // backend name from the file name
  std::string path;  // absolute
};

struct PluginScan {
  std::vector<PluginFile> found;  // one per name, in search order
  struct Shadowed {
    PluginFile file;
    std::string shadowed_by;  // path of the file that wins
  };
  std::vector<Shadowed> shadowed;
  // Files that start like a plugin but whose name is not libcommbench_backend_<name>.so with a
  // valid <name> ("…_my.bad.so", "…_x.so.1"): never loaded, so `commbench plugins` says so.
  std::vector<std::string> misnamed;
  // Entries named like a plugin that are not a file dlopen could load: a directory, a symbolic
  // link whose target is missing, a FIFO. Listed so a broken install is not silently absent.
  struct NotAFile {
    std::string path;
    std::string why;  // "a directory", "a symbolic link to a missing file", ...
  };
  std::vector<NotAFile> not_files;
};

// Lists plugin files in `dirs` (missing or unreadable directories are skipped; files within one
// directory are taken in name order so the result does not depend on the file system).
PluginScan scan_plugin_dirs(const std::vector<std::string>& dirs);

// The file that provides backend `name`, or nullopt.
std::optional<PluginFile> find_plugin(const std::vector<std::string>& dirs, std::string_view name);

// Just the paths of a search path, for the functions above.
std::vector<std::string> search_dir_paths(const std::vector<SearchDir>& dirs);

}  // namespace commbench
