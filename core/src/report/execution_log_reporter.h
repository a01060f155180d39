// execution_log.csv: every timed transfer of the all_pairs sweeps, in the order they ran (seed
// 003's execution log), for lining results up with traces or other logs. Timestamps are on rank
// 0's timeline (report/clock_alignment.h), so the rows of ranks on different hosts compare. The
// rows of an execution are held until it ends, when its end-of-execution clock estimate (the
// drift) is known, and written then, failed executions included; created with the first rows,
// so jobs without all_pairs have no such file.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "report/output_file.h"
#include "report/reporter.h"

namespace commbench {

class ExecutionLogReporter : public Reporter {
 public:
  explicit ExecutionLogReporter(std::filesystem::path output_dir) : dir_(std::move(output_dir)) {}

  void transfers_logged(const ExecutionInfo& exec, const std::vector<TransferLogEntry>& entries) override;
  void execution_done(const ExecutionOutcome& outcome) override;

  static constexpr const char* kFileName = "execution_log.csv";
  static const std::vector<std::string>& columns();

 private:
  std::filesystem::path dir_;
  std::unique_ptr<LineFile> file_;
  std::vector<TransferLogEntry> pending_;  // this execution's, in order
};

}  // namespace commbench
