// How a job ends once its executions are over (docs/output.md, "Exit codes"): the exit code
// from what was recorded, agent 0 writing the summary and telling the others, and the others
// waiting for agent 0's word.
#pragma once

#include <filesystem>
#include <vector>

#include "agent/agent_group.h"
#include "agent/job_runner.h"
#include "plan/plan.h"
#include "report/multi_reporter.h"

namespace commbench {

// What the records say the job ended with: failures, nothing measured, results that could not
// be written, an interruption (in rising precedence).
int job_exit_code(const JobResult& result, bool stop_for_output, bool interrupted);

// Agent 0: summary.json and summary.md, the one-line reason under --quiet, output failures, and
// the exit code for the other agents. Returns the process exit code.
int end_job_as_agent0(const Experiment& exp, const std::vector<Execution>& plan, const JobOptions& opts,
                      const std::filesystem::path& job_dir, int code, JobResult& result, MultiReporter& reporter,
                      AgentGroup& group);

// Any other agent: agent 0's verdict, or, when this one was interrupted, its leave and a bounded
// wait for agent 0 to write the files.
int end_job_as_other_agent(int code, bool interrupted, AgentGroup& group, Millis execution_wait);

}  // namespace commbench
