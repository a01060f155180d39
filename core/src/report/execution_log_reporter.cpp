#include "report/execution_log_reporter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/csv_reporter.h"

namespace commbench {

const std::vector<std::string>& ExecutionLogReporter::columns() {
  // Seed 003's columns, after the execution's identity.
  static const std::vector<std::string> kColumns{
      "run",  "backend",    "world_size",         "config_id",        "src",        "dst",
      "size", "repetition", "timestamp_start_ns", "timestamp_end_ns", "duration_ns"};
  return kColumns;
}

void ExecutionLogReporter::transfers_logged(const ExecutionInfo& exec,
                                            const std::vector<TransferLogEntry>& entries) {
  if (!file_) {
    file_ = std::make_unique<LineFile>(dir_ / kFileName);
    file_->write_line(fmt::format("{}", fmt::join(columns(), ",")));
  }
  // One write per repetition: a crash loses at most the repetition in flight.
  std::string block;
  for (const TransferLogEntry& e : entries) {
    if (!block.empty()) block += '\n';
    block += fmt::format("{},{},{},{},{},{},{},{},{},{},{}", csv_field(exec.run), csv_field(exec.backend),
                         exec.world_size, e.config_id, e.src, e.dst, e.bytes, e.repetition,
                         e.start_ns, e.end_ns, e.duration_ns);
  }
  if (!block.empty()) file_->write_line(block);
}

}  // namespace commbench
