// The job's trace (issue 13 §1): agent 0 merges the ranks' trace files (trace/exec<E>-rank<R>.json,
// measure/trace_recorder.h) into trace.json in the job folder, every event moved onto rank 0's
// timeline with its execution's clock estimates (report/clock_alignment.h), plus telemetry.csv
// (when the job folder has one) as counter tracks. Ranks whose files agent 0 cannot see (another
// host without a shared file system) are listed in the trace's metadata as missing.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "report/reporter.h"

namespace commbench {

struct TraceMergeSummary {
  int files = 0;
  int events = 0;
  int counter_samples = 0;
  std::vector<std::string> missing;  // "exec 1 rank 3"
  // Rank files that could not be read whole: "exec0-rank1.json: 7907 event(s) read; cut off ...".
  // Their complete events are merged; trace.json's metadata lists them as "damaged".
  std::vector<std::string> damaged;
};

// Executions whose rank files are under `job_dir`/trace but that `executions` has no record of
// (a job killed during them: the record is written when an execution ends): index and world size
// (the highest rank file + 1) only, no clock estimate, so their events stay on each rank's clock.
std::vector<ExecutionOutcome> executions_without_record(const std::filesystem::path& job_dir,
                                                        const std::vector<ExecutionOutcome>& executions);

// Reads the per-rank files of `executions` that traced and writes `job_dir`/trace.json.
TraceMergeSummary merge_job_trace(const std::filesystem::path& job_dir,
                                  const std::vector<ExecutionOutcome>& executions,
                                  const std::vector<int>& traced_exec_indices);

// The per-rank file of one rank of one execution.
std::filesystem::path rank_trace_path(const std::filesystem::path& job_dir, int exec_index, int rank);
// The executions with at least one rank file under `job_dir` (those that ran with trace = true).
std::vector<int> traced_executions(const std::filesystem::path& job_dir, const std::vector<ExecutionOutcome>& executions);

// Merges at the end of the job (output format "trace", report/output_formats.cpp); a job
// without traced executions gets no trace.json.
class TraceMergeReporter : public Reporter {
 public:
  explicit TraceMergeReporter(std::filesystem::path job_dir) : dir_(std::move(job_dir)) {}
  void job_done(const JobResult& result) override;

  static constexpr const char* kFileName = "trace.json";

 private:
  std::filesystem::path dir_;
};

}  // namespace commbench
