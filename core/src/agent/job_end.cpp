#include "agent/job_end.h"

#include <string.h>

#include <cstdio>

#include <fmt/format.h>

#include "agent/execution_monitor.h"
#include "report/format.h"
#include "report/output_failures.h"

namespace commbench {

int job_exit_code(const JobResult& result, bool stop_for_output, bool interrupted) {
  int code = kExitOk;
  for (const auto& o : result.executions)
    if (o.status == "failed") code = kExitFailures;
  for (const auto& c : result.cases)
    if (c.wrong > 0 || c.status == "failed") code = kExitFailures;
  for (const auto& r : result.records)
    if (r.body.value("status", "ok") == "failed") code = kExitFailures;
  // A job that measured nothing (every case unsupported or too big, every backend unavailable)
  // passed a qualification script as "success, with notes": it fails, loudly (exit_reason says why).
  if (code == kExitOk && !measured_anything(result)) code = kExitFailures;
  if (stop_for_output) code = kExitOutputFailed;
  if (interrupted) code = kExitInterrupted;
  return code;
}

int end_job_as_agent0(const Experiment& exp, const std::vector<Execution>& plan, const JobOptions& opts,
                      const std::filesystem::path& job_dir, int code, JobResult& result, MultiReporter& reporter,
                      AgentGroup& group) {
  result.exit_code = code;
  for (const RunSpec& run : exp.runs)
    result.expectations_follow |= !run.expect.empty() && (code == kExitOk || code == kExitFailures);
  reporter.job_done(result);  // summary.json and summary.md, if there is room for them
  // --quiet keeps stdout empty, not stderr silent: a job that did not succeed says why in one line
  // (the console's last line); missed expectations say it after their check.
  if (opts.quiet && code != kExitOk && !result.expectations_follow)
    std::fprintf(stderr, "commbench run: exit %d: %s; results in %s\n", code, exit_reason(result).c_str(),
                 job_dir.string().c_str());
  if (!reporter.output_failures().empty()) {
    if (code == kExitOk || code == kExitFailures) code = kExitOutputFailed;  // only the summary failed
    std::fputs(describe_output_failures(reporter.output_failures(), result, plan,
                                        static_cast<size_t>(reporter.records_written()), job_dir)
                   .c_str(),
               stderr);
  }
  group.finish(code);
  if (opts.job_dir_out) *opts.job_dir_out = job_dir.string();
  return code;
}

int end_job_as_other_agent(int code, bool interrupted, AgentGroup& group, Millis execution_wait) {
  // The job's verdict is agent 0's: it saw every execution's merged outcome.
  if (interrupted) {
    // Agent 0 stops waiting for this one at its next execution, and says why.
    const int sig = g_interrupt_signal.load();
    group.announce_leaving(
        {true, sig ? fmt::format("interrupted by signal {} (SIG{})", sig, sigabbrev_np(sig) ? sigabbrev_np(sig) : "?")
                   : "its execution was interrupted"});
    if (!group.wait_for_rank0_to_write(Millis(30000)))
      std::fprintf(stderr, "commbench: rank 0's task did not say that it wrote the job's results (it was killed, "
                           "or a second signal ended this wait); what it wrote is in its job folder\n");
    return code;
  }
  const auto verdict = group.wait_for_finish(execution_wait);
  if (!verdict) {
    std::fprintf(stderr, "commbench: rank 0 finished without telling the job's result (it died?)\n");
    return kExitFailures;
  }
  return *verdict;
}

}  // namespace commbench
