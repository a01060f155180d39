// Warnings for settings that make a job listen wider than it needs to, which commbench honours
// but does not choose by itself (docs/launching.md, "Security"): a store bound to every
// interface, and an inherited variable that opens a backend's listeners on external interfaces
// for a run whose ranks all share this host.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launch/rank_discovery.h"
#include "plan/plan.h"

namespace commbench {

// A warning when the store's bind address is a wildcard (0.0.0.0, ::); `source` names the
// variable it came from (MASTER_ADDR, COMMBENCH_STORE_BIND).
std::optional<std::string> wildcard_store_warning(const std::string& bind_host, const std::string& source);

// Warnings for variables in the agent's environment `env`, inherited by the workers (not set in
// the run's own `env` table), that open listeners on external interfaces for executions whose
// ranks are all on this host. One warning per variable and backend.
std::vector<std::string> inherited_exposure_warnings(const std::vector<Execution>& plan, const EnvMap& env,
                                                     bool single_host);

}  // namespace commbench
