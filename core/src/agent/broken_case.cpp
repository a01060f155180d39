#include "agent/broken_case.h"

#include "common/failure_kind.h"
#include "measure/case_runner.h"
#include "workload/workload_case.h"

namespace commbench {

int broken_case_index(const std::map<int, int>& case_of_rank, int failed_rank, const std::set<int>& reported) {
  const auto zero = case_of_rank.find(0);
  if (zero == case_of_rank.end()) return -1;
  const auto failed = case_of_rank.find(failed_rank);
  const int index = failed != case_of_rank.end() ? failed->second : zero->second;
  return index >= 0 && !reported.count(index) ? index : -1;
}

void record_broken_case(const Execution& exec, ExecutionResult& res, Reporter& reporter) {
  const int index = res.broken_case;
  if (res.outcome.status != "failed" || index < 0) return;
  // An op run's index is into its cases; a data_parallel run's into its `overlap` values.
  const bool steps = exec.workload == WorkloadKind::DataParallel;
  if (static_cast<size_t>(index) >= (steps ? exec.overlap.size() : exec.cases.size())) return;
  CaseRecord rec = steps ? workload::workload_case_record(exec, exec.overlap[static_cast<size_t>(index)])
                         : make_case_record(exec, exec.cases[static_cast<size_t>(index)]);
  rec.status = "failed";
  rec.reason = "the execution failed in this case: " + res.outcome.reason;
  // What tells it from a case whose results were wrong, as data ("other" when the outcome named
  // no kind, e.g. an abort from another agent that never reported).
  rec.failure_kind = res.outcome.failure_kind.empty() ? std::string(failure_kind_name(FailureKind::kOther))
                                                       : res.outcome.failure_kind;
  reporter.case_done(rec);
  res.cases.push_back(std::move(rec));
  res.reported_cases.insert(index);
  res.broken_case = -1;
  res.outcome.cases_done = static_cast<int>(res.cases.size());
}

}  // namespace commbench
