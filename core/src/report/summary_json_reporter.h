// summary.json, written once at job_done (atomically): job metadata, the experiment as parsed,
// every execution and every case. The one file to load for a complete picture of a job.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>

#include "report/reporter.h"

namespace commbench {

class SummaryJsonReporter : public Reporter {
 public:
  explicit SummaryJsonReporter(std::filesystem::path output_dir);

  void job_started(const JobInfo& job) override;
  void job_done(const JobResult& result) override;
  bool writes_whole_file_at_end() const override { return true; }

  static constexpr const char* kFileName = "summary.json";

 private:
  std::filesystem::path output_dir_;
  JobInfo job_;
};

// The document summary.json holds (exposed for tests and for tools that embed it).
nlohmann::ordered_json make_summary_json(const JobInfo& job, const JobResult& result);

}  // namespace commbench
