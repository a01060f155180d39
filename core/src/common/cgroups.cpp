#include "common/cgroups.h"

#include <fstream>
#include <sstream>

namespace commbench {

namespace fs = std::filesystem;

CgroupPaths own_cgroups(const std::string& proc_root) {
  CgroupPaths out;
  std::ifstream in(proc_root + "/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers.empty()) out.v2 = path;
    std::stringstream list(controllers);
    for (std::string c; std::getline(list, c, ',');)
      if (c == "memory") out.v1_memory = path;
      else if (c == "pids") out.v1_pids = path;
  }
  return out;
}

std::vector<fs::path> up_to_root(const fs::path& mount, const std::string& path) {
  std::vector<fs::path> dirs;
  fs::path rel = fs::path(path).relative_path();
  for (;;) {
    dirs.push_back(mount / rel);
    if (rel.empty()) break;
    rel = rel.parent_path();
  }
  return dirs;
}

std::vector<fs::path> own_v2_cgroup_dirs(const std::string& proc_root, const std::string& cgroup_root) {
  const CgroupPaths own = own_cgroups(proc_root);
  if (!own.v2) return {};
  for (const fs::path& mount : {fs::path(cgroup_root), fs::path(cgroup_root) / "unified"}) {
    std::error_code ec;
    if (fs::exists(mount / "cgroup.controllers", ec)) return up_to_root(mount, *own.v2);
  }
  return {};
}

std::optional<uint64_t> read_cgroup_number(const fs::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    size_t used = 0;
    const unsigned long long v = std::stoull(text, &used);
    if (used != text.size()) return std::nullopt;
    return static_cast<uint64_t>(v);
  } catch (...) {
    return std::nullopt;
  }
}

std::optional<uint64_t> read_keyed_value(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  unsigned long long v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return std::nullopt;
}

}  // namespace commbench
