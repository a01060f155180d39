// Tells an OOM kill from any other SIGKILL (docs/output.md, "Faults"): the kernel counts its kills
// in the memory cgroups' memory.events (`oom`: the cgroup hit its limit, `oom_kill`: a process
// of it was killed; cgroup v1: memory.oom_control) and host-wide in /proc/vmstat (`oom_kill`).
// The agent takes a snapshot when an execution starts; a worker that then dies of SIGKILL while a
// counter moved was the OOM killer's, and the limit that was hit is named.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace commbench {

class OomWatch {
 public:
  // Roots are parameters for tests (fake trees); workers share the agent's cgroup.
  explicit OomWatch(std::string proc_root = "/proc", std::string cgroup_root = "/sys/fs/cgroup");

  // "killed by the OOM killer (limit 600 MiB: /sys/fs/cgroup/job/memory.max)" when the kernel
  // counted an OOM kill since the snapshot, else nullopt.
  std::optional<std::string> explain_kill() const;

 private:
  std::map<std::filesystem::path, uint64_t> counters() const;  // file#key -> value

  std::string proc_root_, cgroup_root_;
  std::map<std::filesystem::path, uint64_t> before_;
};

}  // namespace commbench
