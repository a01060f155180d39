#include "agent/outcome_merge.h"

#include <fmt/format.h>

#include "common/failure_kind.h"

namespace commbench {
namespace {

bool failed(const ExecutionOutcome& o) { return o.status != "ok" && o.failed_rank != -2; }

// A failure that another rank's explains: a consequence kind, or a stop on another's abort.
bool consequence(const ExecutionOutcome& o) {
  return o.failed_rank == -2 || is_consequence(failure_kind_from_name(o.failure_kind));
}

// `rank`: the rank to name when `o` names none (-1: keep its own).
void adopt(ExecutionOutcome& mine, const ExecutionOutcome& o, int rank, std::string reason) {
  mine.status = o.status;
  mine.failed_rank = o.failed_rank >= 0 || rank < 0 ? o.failed_rank : rank;
  mine.reason = std::move(reason);
  mine.failure_kind = o.failure_kind;
  mine.failed_phase = o.failed_phase;
  mine.plugin_status = o.plugin_status;
}

}  // namespace

void merge_outcomes(ExecutionOutcome& mine, const std::vector<std::optional<ExecutionOutcome>>& others,
                    int participants, bool cut_short) {
  for (int k = 1; k < participants; ++k) {
    if (others[static_cast<size_t>(k)]) continue;
    if (cut_short) {
      const std::string unheard = fmt::format("a signal to rank 0's task ended its wait for rank {}'s report", k);
      if (!failed(mine)) {
        mine.status = "interrupted";
        mine.failed_rank = -1;
        mine.failure_kind = "interrupted";
        mine.reason = unheard;
      } else {
        mine.reason += " (" + unheard + ")";
      }
      return;
    }
    mine.status = "failed";
    mine.failed_rank = k;
    mine.failure_kind = "crash";
    mine.failed_phase.clear();
    mine.plugin_status = -1;
    mine.reason = fmt::format("rank {}'s agent never reported the outcome: the task died, was stopped "
                              "(SIGSTOP) or its host went away; the other ranks saw: {}", k,
                              mine.reason.empty() ? "nothing wrong" : mine.reason);
    return;
  }
  const bool mine_explained = !failed(mine) || consequence(mine);
  if (mine.status != "interrupted" && mine_explained)
    for (int k = 1; k < participants; ++k) {
      const ExecutionOutcome& o = *others[static_cast<size_t>(k)];
      if (o.status == "interrupted") return adopt(mine, o, k, fmt::format("rank {}: {}", k, o.reason));
    }
  if (mine_explained) {
    for (int k = 1; k < participants; ++k) {
      const ExecutionOutcome& o = *others[static_cast<size_t>(k)];
      if (failed(o) && !consequence(o)) return adopt(mine, o, -1, o.reason);
    }
    if (!failed(mine))
      for (int k = 1; k < participants; ++k) {
        const ExecutionOutcome& o = *others[static_cast<size_t>(k)];
        if (failed(o)) return adopt(mine, o, -1, o.reason);
      }
  }
  if (mine.failed_rank == -2) mine.failed_rank = -1;
}

}  // namespace commbench
