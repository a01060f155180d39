// The terminal view of a job: an nccl-tests-like table per execution printed as cases arrive,
// FAILED lines for executions that die, a backend comparison per [[run]], and a final summary.
// A one-line progress indicator goes to a separate stream, only when that stream is a terminal
// (CI logs get no progress noise).
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

#include "report/reporter.h"

namespace commbench {

enum class ProgressMode {
  Auto,    // only when the progress stream is a TTY
  Always,  // for tests
  Never,
};

class ConsoleReporter : public Reporter {
 public:
  // `out` gets the tables; `progress` the \r-redrawn progress line. Neither is closed.
  explicit ConsoleReporter(std::FILE* out = stdout, std::FILE* progress = stderr,
                           ProgressMode mode = ProgressMode::Auto);

  void job_started(const JobInfo& job) override;
  void execution_started(const ExecutionInfo& exec) override;
  void case_done(const CaseRecord& record) override;
  void record_done(const KindRecord& record) override;  // memory records: a table of their own
  void execution_done(const ExecutionOutcome& outcome) override;
  void run_done(const RunSpec& run, const std::vector<CaseRecord>& records) override;
  void job_done(const JobResult& result) override;

 private:
  void print_comparison(const RunSpec& run, const std::vector<CaseRecord>& records);
  void workload_done(const CaseRecord& r);
  void print_scaling(const RunSpec& run, const std::vector<CaseRecord>& records);
  void print(const std::string& line);  // one line to `out`, clearing the progress line first
  void show_progress(const std::string& text);
  void clear_progress();

  std::FILE* out_;
  std::FILE* progress_;
  bool progress_enabled_;
  bool progress_visible_ = false;

  std::string output_dir_;
  ExecutionInfo exec_;
  std::chrono::steady_clock::time_point job_start_ = std::chrono::steady_clock::now();
  std::string elapsed_and_eta() const;  // " | 12 s elapsed, ~40 s left" for the progress line
  int cases_seen_ = 0;
  bool exec_has_noisy_ = false;
  std::string table_context_;  // memory/timing of the column header printed last
};

}  // namespace commbench
