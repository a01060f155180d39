// results.jsonl: one JSON object per line, written and flushed as each event arrives, so a crash
// loses nothing already measured. Lines: "job" (first), "case", "memory",
// "execution", "job_end" (last;
// its absence means the job did not finish). docs/output.md has every field.
#pragma once

#include <filesystem>

#include "report/output_file.h"
#include "report/reporter.h"

namespace commbench {

class JsonlReporter : public Reporter {
 public:
  // Creates <output_dir>/results.jsonl. Throws std::runtime_error if it cannot.
  explicit JsonlReporter(const std::filesystem::path& output_dir);

  void job_started(const JobInfo& job) override;
  void case_done(const CaseRecord& record) override;
  void record_done(const KindRecord& record) override;
  void execution_done(const ExecutionOutcome& outcome) override;
  void job_done(const JobResult& result) override;

  static constexpr const char* kFileName = "results.jsonl";
  // Case lines now in the file (each complete); fewer than measured after a write failure.
  long records_written() const override { return static_cast<long>(cases_written_); }

 private:
  LineFile file_;
  size_t cases_written_ = 0;
};

}  // namespace commbench
