#include "launch/host_limits.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/cgroups.h"

namespace commbench {
namespace {

void tighten(HostLimits& l, int64_t left, std::string source) {
  if (!l.tasks_left || left < *l.tasks_left) {
    l.tasks_left = std::max<int64_t>(left, 0);
    l.tasks_limit_source = std::move(source);
  }
}

// Every pids.max from this process's cgroup up to the root (v2, or v1's pids hierarchy).
void read_pids_limits(HostLimits& l) {
  std::vector<std::filesystem::path> dirs = own_v2_cgroup_dirs();
  if (const auto v1 = own_cgroups().v1_pids)
    for (auto& d : up_to_root("/sys/fs/cgroup/pids", *v1)) dirs.push_back(std::move(d));
  for (const std::filesystem::path& dir : dirs) {
    const auto max = read_cgroup_number(dir / "pids.max");
    const auto current = read_cgroup_number(dir / "pids.current");
    if (max && current)
      tighten(l, static_cast<int64_t>(*max) - static_cast<int64_t>(*current), (dir / "pids.max").string());
  }
}

}  // namespace

HostLimits read_host_limits() {
  HostLimits l;
  cpu_set_t set;
  CPU_ZERO(&set);
  l.cpus = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? std::max(CPU_COUNT(&set), 1)
                                                          : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  read_pids_limits(l);
  // RLIMIT_NPROC counts every task of the user on the host; it does not apply to root.
  rlimit nproc{};
  if (::geteuid() != 0 && ::getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY)
    tighten(l, static_cast<int64_t>(nproc.rlim_cur), fmt::format("RLIMIT_NPROC (ulimit -u {})", nproc.rlim_cur));
  return l;
}

}  // namespace commbench
