// This process's control groups, read from /proc/self/cgroup and the cgroup file system: the
// memory budget (measure/memory_budget.h), the process limits (launch/host_limits.h) and the
// OOM-kill detection (agent/oom_watch.h) all walk the same folders from this process's cgroup up
// to the root. Roots are parameters so tests can point them at fake trees.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace commbench {

// The cgroup paths in /proc/<self>/cgroup: v2's ("0::/a/b") and those of v1's memory and pids
// hierarchies ("4:memory:/a/b").
struct CgroupPaths {
  std::optional<std::string> v2, v1_memory, v1_pids;
};
CgroupPaths own_cgroups(const std::string& proc_root = "/proc");

// Every folder from `mount/path` up to `mount` itself, deepest first.
std::vector<std::filesystem::path> up_to_root(const std::filesystem::path& mount, const std::string& path);

// v2 folders of this process's cgroup up to the root, deepest first (the unified hierarchy at
// `cgroup_root`, or under `cgroup_root`/unified on hybrid systems); empty without v2.
std::vector<std::filesystem::path> own_v2_cgroup_dirs(const std::string& proc_root = "/proc",
                                                      const std::string& cgroup_root = "/sys/fs/cgroup");

// A cgroup file holding one number; nullopt for "max", a missing file or anything else.
std::optional<uint64_t> read_cgroup_number(const std::filesystem::path& file);

// The value of `key` in a "key value" file (memory.stat, memory.events); nullopt when absent.
std::optional<uint64_t> read_keyed_value(const std::filesystem::path& file, const std::string& key);

}  // namespace commbench
