// How busy this host is just before an execution starts (docs/output.md, "Busy machine"): the
// load averages, the CPUs this process may run on, the other tasks runnable right now, and the
// ranks the execution is about to start here. Sampled always — not only with telemetry — because
// times measured on an oversubscribed machine are the scheduler's, and a user about to publish
// them must be told.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace commbench {

struct HostLoad {
  bool sampled = false;
  int cpus = 0;                       // CPUs in this process's affinity mask
  double load1 = 0, load5 = 0, load15 = 0;
  int runnable_others = 0;            // tasks runnable now, this agent excluded (median of a few reads)
  int ranks_here = 0;                 // ranks the execution starts on this host
  bool oversubscribed() const { return sampled && ranks_here > cpus; }
  // The ranks will wait for a CPU: what else is running plus the ranks outnumber the CPUs.
  bool busy() const { return sampled && runnable_others + ranks_here > cpus; }
};

// Reads /proc (under COMMBENCH_PROC_ROOT when set, for tests): loadavg, and procs_running from
// stat a few times over ~20 ms.
HostLoad sample_host_load(int ranks_here);

// One line for the console and the summaries, or nothing when the host was not busy:
// "busy machine: 3 other runnable tasks + 4 ranks on 2 CPUs (load average 6.1) — ...".
std::optional<std::string> host_load_warning(const HostLoad& load);

nlohmann::json to_json(const HostLoad& load);
void from_json(const nlohmann::json& j, HostLoad& load);

}  // namespace commbench
