#include "launch/host_limits.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
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

std::optional<int64_t> read_number(const std::string& path) {
  std::ifstream in(path);
  int64_t v = 0;
  if (in >> v) return v;
  return std::nullopt;
}

// The kernel's own bounds on tasks, which hold for root too: no more than pid_max process IDs and
// threads-max threads exist at once. /proc/loadavg's fourth field counts the tasks now ("3/412").
void read_kernel_limits(HostLimits& l) {
  const auto pid_max = read_number("/proc/sys/kernel/pid_max");
  const auto threads_max = read_number("/proc/sys/kernel/threads-max");
  std::ifstream loadavg("/proc/loadavg");
  std::string one, five, fifteen, tasks;
  if (!(loadavg >> one >> five >> fifteen >> tasks)) return;
  const size_t slash = tasks.find('/');
  if (slash == std::string::npos) return;
  int64_t now = 0;
  try {
    now = std::stoll(tasks.substr(slash + 1));
  } catch (const std::exception&) {
    return;
  }
  if (pid_max) tighten(l, *pid_max - now, fmt::format("kernel.pid_max ({})", *pid_max));
  if (threads_max) tighten(l, *threads_max - now, fmt::format("kernel.threads-max ({})", *threads_max));
}

}  // namespace

HostLimits read_host_limits() {
  HostLimits l;
  cpu_set_t set;
  CPU_ZERO(&set);
  l.cpus = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? std::max(CPU_COUNT(&set), 1)
                                                          : static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  read_pids_limits(l);
  read_kernel_limits(l);
  // RLIMIT_NPROC counts every task of the user on the host; it does not apply to root.
  rlimit nproc{};
  if (::geteuid() != 0 && ::getrlimit(RLIMIT_NPROC, &nproc) == 0 && nproc.rlim_cur != RLIM_INFINITY)
    tighten(l, static_cast<int64_t>(nproc.rlim_cur), fmt::format("RLIMIT_NPROC (ulimit -u {})", nproc.rlim_cur));
  return l;
}

}  // namespace commbench
