#include "agent/oom_watch.h"

#include <fmt/format.h>

#include "common/cgroups.h"

namespace commbench {
namespace {

namespace fs = std::filesystem;

// A counter is named by its file and key: "/sys/fs/cgroup/a/memory.events#oom".
fs::path counter_name(const fs::path& file, const char* key) { return fs::path(file.string() + "#" + key); }

std::string mib(uint64_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

}  // namespace

OomWatch::OomWatch(std::string proc_root, std::string cgroup_root)
    : proc_root_(std::move(proc_root)), cgroup_root_(std::move(cgroup_root)), before_(counters()) {}

std::map<fs::path, uint64_t> OomWatch::counters() const {
  std::map<fs::path, uint64_t> out;
  for (const fs::path& dir : own_v2_cgroup_dirs(proc_root_, cgroup_root_))
    for (const char* key : {"oom", "oom_kill"})
      if (auto v = read_keyed_value(dir / "memory.events", key)) out[counter_name(dir / "memory.events", key)] = *v;
  if (const auto v1 = own_cgroups(proc_root_).v1_memory)
    for (const fs::path& dir : up_to_root(fs::path(cgroup_root_) / "memory", *v1))
      if (auto v = read_keyed_value(dir / "memory.oom_control", "oom_kill"))
        out[counter_name(dir / "memory.oom_control", "oom_kill")] = *v;
  if (auto v = read_keyed_value(fs::path(proc_root_) / "vmstat", "oom_kill"))
    out[counter_name(fs::path(proc_root_) / "vmstat", "oom_kill")] = *v;
  return out;
}

std::optional<std::string> OomWatch::explain_kill() const {
  const auto now = counters();
  auto moved = [&](const fs::path& name) {
    const auto a = before_.find(name), b = now.find(name);
    return b != now.end() && (a == before_.end() ? b->second > 0 : b->second > a->second);
  };
  auto limited = [](const fs::path& file) {
    return fmt::format("killed by the OOM killer (limit {}: {})", mib(*read_cgroup_number(file)), file.string());
  };
  // The limit that was hit, nearest the workers first: a v2 cgroup whose `oom` moved, or a v1
  // memory cgroup whose `oom_kill` moved, that has a limit.
  const auto v2 = own_v2_cgroup_dirs(proc_root_, cgroup_root_);
  for (const fs::path& dir : v2)
    if (moved(counter_name(dir / "memory.events", "oom")) && read_cgroup_number(dir / "memory.max"))
      return limited(dir / "memory.max");
  if (const auto v1 = own_cgroups(proc_root_).v1_memory)
    for (const fs::path& dir : up_to_root(fs::path(cgroup_root_) / "memory", *v1))
      if (moved(counter_name(dir / "memory.oom_control", "oom_kill")))
        if (auto bytes = read_cgroup_number(dir / "memory.limit_in_bytes"); bytes && *bytes < (1ull << 62))
          return limited(dir / "memory.limit_in_bytes");
  for (const fs::path& dir : v2)
    if (moved(counter_name(dir / "memory.events", "oom_kill")))
      return fmt::format("killed by the OOM killer (counted in {})", (dir / "memory.events").string());
  const fs::path vmstat = fs::path(proc_root_) / "vmstat";
  if (moved(counter_name(vmstat, "oom_kill")))
    return fmt::format("killed by the OOM killer (the host ran out of memory: oom_kill in {})", vmstat.string());
  return std::nullopt;
}

}  // namespace commbench
