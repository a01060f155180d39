#include "report/execution_log_reporter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "report/clock_alignment.h"
#include "report/csv_reporter.h"

namespace commbench {

const std::vector<std::string>& ExecutionLogReporter::columns() {
  // Seed 003's columns, after the execution's identity; `repeat` last (added later, so that
  // readers by position keep working): with `repeats`, which execution a row is from.
  static const std::vector<std::string> kColumns{
      "run",  "backend",    "world_size",         "config_id",        "src",         "dst",
      "size", "repetition", "timestamp_start_ns", "timestamp_end_ns", "duration_ns", "repeat"};
  return kColumns;
}

void ExecutionLogReporter::transfers_logged(const ExecutionInfo&, const std::vector<TransferLogEntry>& entries) {
  pending_.insert(pending_.end(), entries.begin(), entries.end());
}

void ExecutionLogReporter::execution_done(const ExecutionOutcome& outcome) {
  if (pending_.empty()) return;
  std::vector<TransferLogEntry> entries;
  entries.swap(pending_);
  if (!file_) {
    file_ = std::make_unique<LineFile>(dir_ / kFileName);
    file_->write_line(fmt::format("{}", fmt::join(columns(), ",")));
  }
  // The timed interval's start (the sender's post, or the receiver's: all_pairs.h) on rank 0's
  // timeline; the end is that plus the sample, so duration_ns = end - start as seed 003 defines it.
  const ClockAlignment clock(outcome.clock);
  const ExecutionInfo& exec = outcome.info;
  std::string block;
  for (const TransferLogEntry& e : entries) {
    if (!block.empty()) block += '\n';
    const int64_t start = clock.to_rank0(e.timer_rank, e.start_ns);
    block += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}", csv_field(exec.run), csv_field(exec.backend),
                         exec.world_size, e.config_id, e.src, e.dst, e.bytes, e.repetition, start,
                         start + e.duration_ns, e.duration_ns, exec.repeat);
  }
  file_->write_line(block);
}

}  // namespace commbench
