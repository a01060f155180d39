// Agent 0's verdict on an execution that ran on several agents (one per launched task): which
// rank's failure the execution record names.
#pragma once

#include <optional>
#include <vector>

#include "report/reporter.h"

namespace commbench {

// Folds the outcomes the other agents reported (`others[k]` for rank k; nullopt: it never
// reported) into agent 0's own (`mine`, rank 0's). The blame goes, in this order, to
//   1. an agent that never reported: it died, and its peers' errors are consequences;
//   2. a rank interrupted by a signal, unless rank 0 failed on its own account;
//   3. the first rank, in rank order with rank 0 first, whose failure is a cause (not a
//      consequence kind, common/failure_kind.h: rank 0 seeing its peer go away is not to blame);
//   4. the first failed rank at all.
// `failed_rank` -2 (a rank that stopped on another's abort) is a consequence too; left over, it
// becomes -1. `cut_short`: a signal to agent 0 ended its wait for the reports, so an agent that had
// not reported is not known to have died: agent 0's own outcome stands (interrupted if it was ok),
// saying so.
void merge_outcomes(ExecutionOutcome& mine, const std::vector<std::optional<ExecutionOutcome>>& others,
                    int participants, bool cut_short = false);

}  // namespace commbench
