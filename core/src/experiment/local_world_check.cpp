#include "experiment/local_world_check.h"

#include <fmt/format.h>

namespace commbench {

std::vector<Diagnostic> check_local_worlds(const Experiment& exp, const HostLimits& limits) {
  std::vector<Diagnostic> out;
  const int64_t per_cpu_limit = static_cast<int64_t>(kRanksPerCpu) * limits.cpus;
  for (const RunSpec& run : exp.runs)
    for (size_t i = 0; i < run.world_sizes.size(); ++i) {
      const int64_t world = run.world_sizes[i];
      const SourcePos at = run.pos_of(fmt::format("world_sizes[{}]", i));
      if (limits.tasks_left && world * kTasksPerWorker > *limits.tasks_left) {
        out.push_back(Diagnostic{
            Diagnostic::Severity::Error, at,
            fmt::format("world size {} needs about {} processes and threads on this host ({} per worker), but "
                        "{} lets only {} more start: the run could not start its workers. Use fewer ranks, "
                        "raise the limit, or run under a launcher across hosts",
                        world, world * kTasksPerWorker, kTasksPerWorker, limits.tasks_limit_source,
                        *limits.tasks_left)});
        continue;
      }
      if (world > per_cpu_limit && !run.oversubscribe)
        out.push_back(Diagnostic{
            Diagnostic::Severity::Error, at,
            fmt::format("world size {} starts {} worker processes on this host, which gives this process {} "
                        "CPU{}: more than {} ({} per CPU) only makes them compete, and thousands can bring "
                        "the host down. Set oversubscribe = true in this run to allow it, use fewer ranks, or "
                        "run under a launcher across hosts",
                        world, world, limits.cpus, limits.cpus == 1 ? "" : "s", per_cpu_limit, kRanksPerCpu)});
    }
  return out;
}

}  // namespace commbench
