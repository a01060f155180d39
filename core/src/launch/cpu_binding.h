// Which CPUs each local rank is bound to under `cpu_binding` (common/cpu_binding_mode.h). The
// host's topology is read from sysfs (under COMMBENCH_SYSFS_ROOT when set, observe/host_files.h);
// only CPUs in the agent's own affinity are dealt, so a cgroup's or `taskset`'s cpuset is kept.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/cpu_binding_mode.h"

namespace commbench {

// The CPU sets ranks are dealt over, in the order Open MPI's hwloc counts them: per physical core
// (the CPUs sysfs lists as its hardware threads) its allowed CPUs, packages by their lowest CPU and
// cores within one likewise (`core`); per NUMA node its allowed CPUs, by node number (`numa`). A CPU sysfs does not describe
// is a core of its own; a host without NUMA nodes in sysfs is one node. Empty for `none` or when
// `allowed` is empty.
std::vector<std::set<int>> binding_units(CpuBinding mode, const std::set<int>& allowed);

// Local rank r's CPUs: unit r mod the unit count, so ranks share units only when there are more
// ranks than units (as Open MPI's overload-allowed binding). Empty when `units` is.
std::set<int> cpus_for_local_rank(const std::vector<std::set<int>>& units, int local_rank);

// The CPUs this process's cgroup may use (cgroup v2 `cpuset.cpus.effective`, v1
// `cpuset.effective_cpus` or `cpuset.cpus`, from the process's group up to the mount's root), else
// the host's online CPUs; empty when none can be read. Read from `root` ("" = the real "/", never
// COMMBENCH_SYSFS_ROOT: like the affinity it is compared with, it is this process's own).
std::set<int> host_cpuset(const std::string& root = "");

// What one agent does with `cpu_binding` for one execution.
struct CpuBindingPlan {
  CpuBinding applied = CpuBinding::None;  // None: the ranks stay where they are
  std::vector<std::set<int>> units;       // dealt with cpus_for_local_rank
  bool own_cpus = false;  // no two local ranks share a unit (plugins may then poll: CB_HOST_OWN_CPUS)
  std::string note;       // why `asked` was not applied, for a warning; "" when it was or was none
};

// `agent_cpus`: the agent's affinity; `host_cpus`: host_cpuset(); `solo`: the agent starts every
// rank of the host (local mode); else it starts one rank under a launcher, which binds instead
// when it left the agent fewer CPUs than the host's cpuset (srun --cpu-bind, mpirun --bind-to):
// each agent would only see its own share and could not tell which part of it is its rank's.
// (Any other narrowing of every task alike, taskset or numactl around the launcher, reads the same
// and is kept too: telling them apart needs the host's agents to compare their masks.)
// `local_ranks`: how many ranks this host deals, at least the highest local rank + 1.
CpuBindingPlan plan_cpu_binding(CpuBinding asked, const std::set<int>& agent_cpus, const std::set<int>& host_cpus,
                                bool solo, int local_ranks);

}  // namespace commbench
