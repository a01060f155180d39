// Fans every event out to several reporters, in the order they were added.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "report/reporter.h"

namespace commbench {

class OutputError;  // report/output_file.h

class MultiReporter : public Reporter {
 public:
  void add(std::unique_ptr<Reporter> reporter);
  size_t size() const { return reporters_.size(); }

  // If one reporter throws, the others still get the event, so one broken output does not cost
  // the rest. A failed write (OutputError: disk full, I/O error) is recorded, not thrown: the
  // job asks output_failures() and decides to stop. Any other exception is rethrown afterwards.
  void job_started(const JobInfo& job) override;
  void execution_started(const ExecutionInfo& exec) override;
  void case_done(const CaseRecord& record) override;
  void record_done(const KindRecord& record) override;
  void transfers_logged(const ExecutionInfo& exec, const std::vector<TransferLogEntry>& entries) override;
  void execution_done(const ExecutionOutcome& outcome) override;
  void run_done(const RunSpec& run, const std::vector<CaseRecord>& records) override;
  void job_done(const JobResult& result) override;

  // The first reporter's count that keeps one (results.jsonl's), else 0.
  long records_written() const override;

  struct OutputFailure {
    std::string path;     // the file that could not be written
    std::string message;  // OutputError::what(): path, reason, what to do
  };
  // The first failure of each file, in the order they happened.
  const std::vector<OutputFailure>& output_failures() const { return failures_; }

 private:
  template <class F>
  void each(F&& call);
  void record_failure(const OutputError& e);

  std::vector<std::unique_ptr<Reporter>> reporters_;
  std::vector<OutputFailure> failures_;
};

}  // namespace commbench
