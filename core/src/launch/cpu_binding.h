// Which CPUs each local rank is bound to under `cpu_binding` (common/cpu_binding_mode.h). The
// host's topology is read from sysfs (under COMMBENCH_SYSFS_ROOT when set, observe/host_files.h);
// only CPUs in the agent's own affinity are dealt, so a cgroup's or a launcher's cpuset is kept.
#pragma once

#include <set>
#include <vector>

#include "common/cpu_binding_mode.h"

namespace commbench {

// The CPU sets ranks are dealt over, in order of their lowest CPU: per physical core its allowed
// hardware threads (`core`), per NUMA node its allowed CPUs (`numa`). A CPU whose core sysfs does
// not describe is a core of its own; a host without NUMA nodes in sysfs is one node. Empty for
// `none` or when `allowed` is empty.
std::vector<std::set<int>> binding_units(CpuBinding mode, const std::set<int>& allowed);

// Local rank r's CPUs: unit r mod the unit count, so ranks share units only when there are more
// ranks than units (as Open MPI's overload-allowed binding). Empty when `units` is.
std::set<int> cpus_for_local_rank(const std::vector<std::set<int>>& units, int local_rank);

}  // namespace commbench
