// summary.md, written once at job_done (atomically): job metadata, then per [[run]] its
// executions, one table per (backend, world size, op, dtype, redop, placement), and a backend
// comparison when the run has several backends.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "report/reporter.h"

namespace commbench {

class MarkdownReporter : public Reporter {
 public:
  explicit MarkdownReporter(std::filesystem::path output_dir);

  void job_started(const JobInfo& job) override;
  void run_done(const RunSpec& run, const std::vector<CaseRecord>& records) override;
  void job_done(const JobResult& result) override;
  bool writes_whole_file_at_end() const override { return true; }

  static constexpr const char* kFileName = "summary.md";

 private:
  std::filesystem::path output_dir_;
  JobInfo job_;
  std::map<int, std::vector<std::string>> backend_order_;  // run index -> RunSpec::backends
};

// The whole document. `backend_order` maps a run index to its backends in file order (runs not
// in the map use the order of their executions).
std::string render_markdown_summary(const JobInfo& job, const JobResult& result,
                                    const std::map<int, std::vector<std::string>>& backend_order);

}  // namespace commbench
