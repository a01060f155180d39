#include "agent/broken_case.h"

#include "measure/case_runner.h"

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
  if (res.outcome.status != "failed" || index < 0 || static_cast<size_t>(index) >= exec.cases.size()) return;
  CaseRecord rec = make_case_record(exec, exec.cases[static_cast<size_t>(index)]);
  rec.status = "failed";
  rec.reason = "the execution failed in this case: " + res.outcome.reason;
  reporter.case_done(rec);
  res.cases.push_back(std::move(rec));
  res.reported_cases.insert(index);
  res.broken_case = -1;
  res.outcome.cases_done = static_cast<int>(res.cases.size());
}

}  // namespace commbench
