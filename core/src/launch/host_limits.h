// How many local ranks this host can take (issue 28 §3): a local run starts one worker process
// per rank, each with a few threads. Past a multiple of the CPUs they only compete for them (and
// thousands bring the host down); past the process limits they cannot even start. Checked at
// validation (experiment/local_world_check.h), before anything is spawned.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace commbench {

// Local ranks per CPU allowed without `oversubscribe = true`.
inline constexpr int kRanksPerCpu = 8;
// Tasks (the process and its threads) a worker needs at the very least: it, its heartbeat
// thread, and one for the backend. A limit below world × this cannot work.
inline constexpr int kTasksPerWorker = 3;

struct HostLimits {
  int cpus = 1;  // CPUs this process may run on (its affinity mask)
  // Tasks this user may still start here: the tightest of the cgroup's pids.max - pids.current
  // (up to the root), RLIMIT_NPROC (not for root), and the kernel's pid_max and threads-max less
  // the tasks that exist; nullopt when nothing limits them.
  std::optional<int64_t> tasks_left;
  std::string tasks_limit_source;  // the file or limit that decided tasks_left
};

HostLimits read_host_limits();

}  // namespace commbench
