#include "plugin/search_path.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>

namespace fs = std::filesystem;

#ifndef COMMBENCH_PLUGIN_SUBDIR
#define COMMBENCH_PLUGIN_SUBDIR "lib/commbench/plugins"
#endif
#ifndef COMMBENCH_INSTALL_PLUGIN_DIR
#define COMMBENCH_INSTALL_PLUGIN_DIR ""
#endif

namespace commbench {
namespace {

constexpr std::string_view kFilePrefix = "libcommbench_backend_";
constexpr std::string_view kFileSuffix = ".so";

std::string normalise(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::absolute(dir, ec);
  if (ec) p = dir;
  std::string s = p.lexically_normal().string();
  if (s.size() > 1 && s.back() == '/') s.pop_back();  // "a/b/" and "a/b" are one directory
  return s;
}

// Key under which two spellings of one directory (symlinks, "..") compare equal.
std::string identity(const std::string& dir) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(dir, ec);
  return ec ? dir : p.string();
}

std::vector<std::string> split_colon_list(const std::string& list) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) parts.push_back(list.substr(start, end - start));  // "a::b" skips the empty entry
    start = end + 1;
  }
  return parts;
}

std::string read_link_text(const fs::path& link) {
  std::error_code ec;
  const fs::path target = fs::read_symlink(link, ec);
  return ec ? std::string("a target it cannot read") : target.string();
}

bool valid_name(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

// Why a directory entry is not a file dlopen could load, or "" when it is one (following
// symbolic links, as dlopen does).
std::string not_a_file(const fs::directory_entry& entry) {
  std::error_code ec;
  const fs::file_status st = entry.status(ec);
  if (fs::is_regular_file(st)) return "";
  std::error_code link_ec;
  const bool link = entry.is_symlink(link_ec);
  if (st.type() == fs::file_type::not_found)
    return link ? fmt::format("a symbolic link to {}, which does not exist", read_link_text(entry.path()))
                : "gone while the folder was read";
  if (ec) return fmt::format("cannot be examined: {}", ec.message());
  const char* what = fs::is_directory(st) ? "a directory" : fs::is_fifo(st) ? "a FIFO" : fs::is_socket(st) ? "a socket"
                     : fs::is_block_file(st) || fs::is_character_file(st) ? "a device file" : "not a regular file";
  return link ? fmt::format("a symbolic link to {}, {}", read_link_text(entry.path()), what) : what;
}

}  // namespace

std::vector<SearchDir> build_search_path(const SearchPathInputs& in) {
  std::vector<SearchDir> dirs;
  std::vector<std::string> seen;
  auto add = [&](const std::string& dir, const char* origin) {
    if (dir.empty()) return;
    SearchDir d{normalise(dir), origin};
    std::string id = identity(d.path);
    if (std::find(seen.begin(), seen.end(), id) != seen.end()) return;
    seen.push_back(std::move(id));
    dirs.push_back(std::move(d));
  };

  for (const auto& d : in.extra_dirs) add(d, "plugin path given to this command");
  for (const auto& d : split_colon_list(in.env_plugin_path)) add(d, "COMMBENCH_PLUGIN_PATH");
  if (!in.exe_path.empty()) {
    fs::path exe_dir = fs::path(in.exe_path).parent_path();
    add((exe_dir / ".." / COMMBENCH_PLUGIN_SUBDIR).string(), "next to the commbench binary");
    add((exe_dir / "plugins").string(), "next to the commbench binary");
  }
  add(in.install_dir, "install directory");
  return dirs;
}

std::string current_executable_path() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::vector<SearchDir> default_search_path(const std::vector<std::string>& extra_dirs) {
  SearchPathInputs in;
  in.extra_dirs = extra_dirs;
  if (const char* env = std::getenv("COMMBENCH_PLUGIN_PATH")) in.env_plugin_path = env;
  in.exe_path = current_executable_path();
  in.install_dir = COMMBENCH_INSTALL_PLUGIN_DIR;
  return build_search_path(in);
}

std::string plugin_file_name(std::string_view name) {
  return std::string(kFilePrefix) + std::string(name) + std::string(kFileSuffix);
}

std::optional<std::string> plugin_name_from_file(std::string_view file_name) {
  if (!file_name.starts_with(kFilePrefix) || !file_name.ends_with(kFileSuffix)) return std::nullopt;
  std::string_view name = file_name.substr(
      kFilePrefix.size(), file_name.size() - kFilePrefix.size() - kFileSuffix.size());
  if (!valid_name(name)) return std::nullopt;
  return std::string(name);
}

PluginScan scan_plugin_dirs(const std::vector<std::string>& dirs) {
  PluginScan scan;
  std::map<std::string, size_t> winner;  // name -> index in scan.found
  for (const auto& dir : dirs) {
    std::error_code ec;
    std::vector<PluginFile> in_dir;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string file = it->path().filename().string();
      if (std::string why = not_a_file(*it); !why.empty()) {
        if (plugin_name_from_file(file)) scan.not_files.push_back({normalise(it->path().string()), std::move(why)});
        continue;
      }
      if (auto name = plugin_name_from_file(file))
        in_dir.push_back({*name, normalise(it->path().string())});
      else if (file.starts_with(kFilePrefix) && file.find(".so") != std::string::npos)
        scan.misnamed.push_back(normalise(it->path().string()));
    }
    std::sort(in_dir.begin(), in_dir.end(),
              [](const PluginFile& a, const PluginFile& b) { return a.path < b.path; });
    std::sort(scan.misnamed.begin(), scan.misnamed.end());
    std::sort(scan.not_files.begin(), scan.not_files.end(),
              [](const PluginScan::NotAFile& a, const PluginScan::NotAFile& b) { return a.path < b.path; });
    for (auto& file : in_dir) {
      auto [it, inserted] = winner.try_emplace(file.name, scan.found.size());
      if (inserted)
        scan.found.push_back(std::move(file));
      else
        scan.shadowed.push_back({std::move(file), scan.found[it->second].path});
    }
  }
  return scan;
}

std::optional<PluginFile> find_plugin(const std::vector<std::string>& dirs, std::string_view name) {
  if (!valid_name(name)) return std::nullopt;  // also keeps "../x" from escaping the directories
  // Direct lookup rather than a scan: the first directory holding the file wins, as in the scan.
  for (const auto& dir : dirs) {
    fs::path candidate = fs::path(dir) / plugin_file_name(name);
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec)) return PluginFile{std::string(name), normalise(candidate.string())};
  }
  return std::nullopt;
}

std::vector<std::string> search_dir_paths(const std::vector<SearchDir>& dirs) {
  std::vector<std::string> paths;
  paths.reserve(dirs.size());
  for (const auto& d : dirs) paths.push_back(d.path);
  return paths;
}

}  // namespace commbench
