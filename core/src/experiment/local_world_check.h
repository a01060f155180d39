// Refuses, before anything runs, a local world this host cannot or should not run (issue 28 §3,
// launch/host_limits.h): more than kRanksPerCpu ranks per CPU without `oversubscribe = true`
// (an error naming the run's world_sizes), or more workers than the process limits let start
// (an error either way).
#pragma once

#include <vector>

#include "common/diagnostic.h"
#include "experiment/experiment.h"
#include "launch/host_limits.h"

namespace commbench {

std::vector<Diagnostic> check_local_worlds(const Experiment& exp, const HostLimits& limits);

}  // namespace commbench
