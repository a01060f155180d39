#include "plugin/loader.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <vector>

#include <boost/dll/shared_library.hpp>
#include <fmt/format.h>

namespace commbench {
namespace {

// The functions without which the worker cannot run a single case.
struct MandatoryFunction {
  const char* name;
  bool (*present)(const cb_backend_api&);
};
#define CB_MANDATORY(field) {#field, [](const cb_backend_api& a) { return a.field != nullptr; }}
constexpr MandatoryFunction kMandatoryFunctions[] = {
    CB_MANDATORY(error_code),   CB_MANDATORY(error_message), CB_MANDATORY(error_destroy),
    CB_MANDATORY(get_capabilities), CB_MANDATORY(init),      CB_MANDATORY(finalize),
    CB_MANDATORY(comm_create),  CB_MANDATORY(comm_destroy),  CB_MANDATORY(post),
    CB_MANDATORY(test),         CB_MANDATORY(wait),          CB_MANDATORY(request_free),
};
#undef CB_MANDATORY

// What to do about a dlopen failure, from the loader's text.
std::string_view dl_error_hint(std::string_view reason) {
  // Before "cannot open shared object file", which dlopen also says for this case.
  if (reason.find("Permission denied") != std::string_view::npos)
    return " (the file named there cannot be read by this user: fix its permissions, e.g. "
           "chmod a+r, or remove it from the plugin directory)";
  if (reason.find("cannot open shared object file") != std::string_view::npos)
    return " (a library the plugin needs is missing: install it or add its directory to "
           "LD_LIBRARY_PATH)";
  if (reason.find("undefined symbol") != std::string_view::npos)
    return " (the plugin was linked incompletely or against another version of a library)";
  if (reason.find("ELF") != std::string_view::npos || reason.find("too short") != std::string_view::npos)
    return " (not a shared library for this machine: remove it from the plugin directory)";
  return "";
}

// Boost.DLL reports every dlopen failure as "bad file descriptor"; dlerror() still holds the
// useful text ("libnccl.so.2: cannot open shared object file", "undefined symbol: ...").
std::string last_dl_error(const boost::system::error_code& ec) {
  const char* text = dlerror();
  return text != nullptr ? std::string(text) : ec.message();
}

}  // namespace

cb_backend_api adopt_api_table(const cb_backend_api* table, const std::string& path) {
  if (table == nullptr)
    throw PluginLoadError(fmt::format(
        "plugin {}: {}() returned NULL; the plugin must return a pointer to its static "
        "function table", path, CB_ENTRY_SYMBOL));

  // struct_size and abi_major are the frozen head of the table: safe to read from any plugin.
  constexpr size_t kHeadSize = CB_STRUCT_SIZE(cb_backend_api, abi_minor);
  if (table->struct_size < kHeadSize)
    throw PluginLoadError(fmt::format(
        "plugin {}: its function table reports struct_size {} (less than the {} bytes every "
        "version has); set struct_size = CB_STRUCT_SIZE(cb_backend_api, <last field of your abi_minor>): enqueue "
        "for 1.3, group_end for 1.0 (the SDK's EntryPoints::table() sets it)", path, table->struct_size,
        kHeadSize));
  if (table->abi_major != CB_ABI_MAJOR)
    throw PluginLoadError(fmt::format(
        "plugin {} was built for ABI {}, this commbench speaks ABI {}: rebuild it against "
        "commbench's backend.h", path, table->abi_major, CB_ABI_MAJOR));

  cb_backend_api api{};
  std::memcpy(&api, table, std::min(table->struct_size, sizeof(cb_backend_api)));

  std::vector<std::string_view> missing;
  for (const auto& f : kMandatoryFunctions)
    if (!f.present(api)) missing.push_back(f.name);
  if (!missing.empty())
    throw PluginLoadError(fmt::format(
        "plugin {} does not provide the mandatory function(s) {} (its table has struct_size {}); "
        "every ABI {} plugin must set them", path, fmt::join(missing, ", "), table->struct_size,
        CB_ABI_MAJOR));
  if (api.name == nullptr || *api.name == '\0')
    throw PluginLoadError(fmt::format("plugin {} has no name in its function table", path));
  return api;
}

namespace {

// unsafe_plugin_file for the file `real` (canonical: no link in it), reached as `path`.
std::optional<std::string> unsafe_real_file(const std::filesystem::path& real, const std::string& path) {
  const uid_t me = ::geteuid();
  // commbench's own owner installed it, and its plugins beside it (an administrator's install
  // need not be root's): trusted like root.
  struct stat exe {};
  const bool have_exe = ::stat("/proc/self/exe", &exe) == 0;
  const auto trusted = [&](uid_t uid) { return uid == me || uid == 0 || (have_exe && uid == exe.st_uid); };
  bool is_file = true;
  for (std::filesystem::path p = real;; p = p.parent_path()) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return std::nullopt;
    const std::string what = is_file ? std::string("it") : fmt::format("the folder {} above it", p.string());
    const std::string link = real.string() == path ? "" : fmt::format(" ({} leads to {})", path, real.string());
    if (!trusted(st.st_uid))
      return fmt::format("{}{} belongs to uid {}, not to you, root or commbench's owner: whoever that is decides what "
                         "code runs; keep plugins in folders only you or an administrator control",
                         what, link, st.st_uid);
    if (st.st_mode & S_IWOTH) {
      if (is_file)
        return fmt::format("it{} can be written by every user (mode {:04o}): chmod o-w it", link, st.st_mode & 07777);
      if (!(st.st_mode & S_ISVTX))
        return fmt::format("{}{} can be written by every user (mode {:04o}, no sticky bit), so anyone can replace "
                           "what is in it: keep plugins in folders only you or an administrator can write",
                           what, link, st.st_mode & 07777);
      // A sticky folder (/tmp): others cannot touch what is ours in it; the entry below it was checked.
    }
    if (p == p.root_path() || p.parent_path() == p) break;
    is_file = false;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unsafe_plugin_file(const std::string& path) {
  // The file itself, not a link to it, and every folder above it: whoever may change any of them
  // decides what the plugin's code is.
  std::error_code ec;
  const std::filesystem::path real = std::filesystem::canonical(path, ec);
  if (ec) return fmt::format("its path cannot be resolved ({})", ec.message());
  return unsafe_real_file(real, path);
}

LoadedPlugin load_plugin(const std::string& path) { return load_plugin(path, {}); }

LoadedPlugin load_plugin(const std::string& path, const std::function<void()>& library_loaded) {
  // Checked up front: dlopen's "cannot open shared object file" is ambiguous between this file
  // and one of its dependencies.
  std::error_code fs_ec;
  if (!std::filesystem::is_regular_file(path, fs_ec))
    throw PluginLoadError(fmt::format("plugin {} does not exist or is not a file", path));
  if (::access(path.c_str(), R_OK) != 0) {
    const int err = errno;
    throw PluginLoadError(fmt::format(
        "cannot read plugin {}: {}; {}", path, std::strerror(err),
        err == EACCES ? "make it readable by this user (chmod a+r) or remove it from the plugin "
                        "directory"
                      : "check the file"));
  }

  // Before dlopen: loading runs the library's constructors, as this user.
  // Resolved once, then checked and loaded by that name: a link re-pointed between the check and
  // the load cannot bring in a file that was not checked (every folder of the real path was).
  std::error_code real_ec;
  const std::filesystem::path real = std::filesystem::canonical(path, real_ec);
  if (real_ec)
    throw PluginLoadError(fmt::format("refusing to load plugin {}: its path cannot be resolved ({})", path,
                                      real_ec.message()));
  if (const auto why = unsafe_real_file(real, path))
    throw PluginLoadError(fmt::format("refusing to load plugin {}: {}", path, *why));

  // Never unloaded (see load_plugin() in loader.h for why): the object stays reachable from this
  // list until the process exits, and the list itself is never destroyed, so no static destructor
  // unloads it (and leak checkers see it held, not lost).
  static auto* const kept = new std::vector<boost::dll::shared_library*>();
  auto* library = new boost::dll::shared_library();
  kept->push_back(library);
  boost::system::error_code ec;
  library->load(boost::dll::fs::path(real),
                boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec) {
    std::string reason = last_dl_error(ec);
    kept->pop_back();
    delete library;  // nothing was loaded
    throw PluginLoadError(fmt::format("cannot load plugin {}: {}{}", path, reason, dl_error_hint(reason)));
  }
  if (!library->has(CB_ENTRY_SYMBOL))
    throw PluginLoadError(fmt::format(
        "{} is not a commbench ABI {} plugin: it does not export {}() (export it with CB_EXPORT "
        "and extern \"C\"; a plugin for another ABI major exports another symbol)",
        path, CB_ABI_MAJOR, CB_ENTRY_SYMBOL));

  auto entry = library->get<const cb_backend_api*()>(CB_ENTRY_SYMBOL);
  if (library_loaded) library_loaded();
  LoadedPlugin plugin;
  plugin.path = path;
  plugin.api = adopt_api_table(entry(), path);
  return plugin;
}

}  // namespace commbench
