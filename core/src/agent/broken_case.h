// The case a failed execution broke in (a crash, an op's error, a time limit) gets a record,
// `failed` with the execution's reason and no times, instead of vanishing among the cases not
// run. Written after the outcomes of every agent are merged, so the reason is the one the
// execution record gives (docs/output.md, "Faults and exit codes").
#pragma once

#include <map>
#include <set>

#include "agent/execution_monitor.h"
#include "report/reporter.h"

namespace commbench {

// Which case that is: the failed rank's, when this agent hosts it; rank 0's when the failed rank
// is another agent's (-2: an abort from elsewhere). -1 when this agent does not host rank 0 (only
// rank 0's agent writes case records), when that rank was in no case (start-up, finalisation, a
// data_parallel run's calibration, the all_pairs sweep, a memory workload), or when the case's
// record already arrived (a rank can fail after it, before its next phase message).
// `case_of_rank`: hosted global rank -> its case (-1: none).
int broken_case_index(const std::map<int, int>& case_of_rank, int failed_rank, const std::set<int>& reported);

// A case is an op case, or a data_parallel run's step case (one per `overlap` value; its record
// names the model and overlap, workload::workload_case_record). When `res` is a failed execution
// with a broken case (ExecutionResult::broken_case), adds its record to res.cases, hands it to the
// reporters and counts it in cases_done. Otherwise nothing.
void record_broken_case(const Execution& exec, ExecutionResult& res, Reporter& reporter);

}  // namespace commbench
