// A task of a multi-task launch that stops before its job starts (its experiment did not
// validate on its host): it tells rank 0 through rank 0's store instead of leaving rank 0 to wait
// out the rendezvous for it (docs/launching.md, "What happens when something fails").
#pragma once

#include <string>

#include "launch/rank_discovery.h"

namespace commbench {

// Tells rank 0 why this task stops (`why`), as a launch error: rank 0 ends the job at once with
// exit 2, naming it. False at once for rank 0 and for a local run, and when rank 0's store could
// not be reached (AgentGroup::leave_before_joining).
bool tell_rank0_before_joining(const LaunchContext& launch, const std::string& why);

}  // namespace commbench
