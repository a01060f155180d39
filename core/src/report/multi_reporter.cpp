#include "report/multi_reporter.h"

#include <algorithm>
#include <cerrno>
#include <exception>

#include "report/output_file.h"

namespace commbench {

void MultiReporter::add(std::unique_ptr<Reporter> reporter) {
  if (reporter) reporters_.push_back(std::move(reporter));
}

void MultiReporter::record_failure(const OutputError& e) {
  const std::string path = e.path().string();
  if (std::none_of(failures_.begin(), failures_.end(), [&](const OutputFailure& f) { return f.path == path; }))
    failures_.push_back(OutputFailure{path, e.what()});
}

template <class F>
void MultiReporter::each(F&& call) {
  std::exception_ptr first;
  for (auto& r : reporters_) {
    try {
      call(*r);
    } catch (const OutputError& e) {
      record_failure(e);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void MultiReporter::job_started(const JobInfo& job) {
  each([&](Reporter& r) { r.job_started(job); });
}
void MultiReporter::execution_started(const ExecutionInfo& exec) {
  each([&](Reporter& r) { r.execution_started(exec); });
}
void MultiReporter::transfers_logged(const ExecutionInfo& exec,
                                     const std::vector<TransferLogEntry>& entries) {
  each([&](Reporter& r) { r.transfers_logged(exec, entries); });
}

void MultiReporter::case_done(const CaseRecord& record) {
  each([&](Reporter& r) { r.case_done(record); });
}
void MultiReporter::record_done(const KindRecord& record) {
  each([&](Reporter& r) { r.record_done(record); });
}
void MultiReporter::execution_done(const ExecutionOutcome& outcome) {
  each([&](Reporter& r) { r.execution_done(outcome); });
}
void MultiReporter::run_done(const RunSpec& run, const std::vector<CaseRecord>& records) {
  each([&](Reporter& r) { r.run_done(run, records); });
}
void MultiReporter::job_done(const JobResult& result) {
  // A summary that found the disk full is written again after the others: writing theirs gave
  // back what their reservations held beyond their content. (summary.json, written first, was
  // lost with 144 KiB free once summary.md had been written.)
  // Only files written whole at the end are tried again (a line file that failed once stays
  // failed); if the second try fails too, the first error is the one kept: it says what to do.
  std::vector<std::pair<Reporter*, OutputError>> out_of_space;
  std::exception_ptr first;
  for (auto& r : reporters_) {
    try {
      r->job_done(result);
    } catch (const OutputError& e) {
      if ((e.error_number() == ENOSPC || e.error_number() == EDQUOT) && r->writes_whole_file_at_end())
        out_of_space.emplace_back(r.get(), e);
      else
        record_failure(e);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  for (auto& [r, original] : out_of_space) {
    try {
      r->job_done(result);
    } catch (const OutputError&) {
      record_failure(original);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

long MultiReporter::records_written() const {
  for (const auto& r : reporters_)
    if (long n = r->records_written(); n >= 0) return n;
  return 0;
}

}  // namespace commbench
