// Checks an experiment against the plugins that will run it, before anything runs:
// unknown backend, op or memory type a backend cannot do (errors); dtype/redop combinations a
// backend skips (warnings: those cases are recorded as unsupported, not failed).
#pragma once

#include <vector>

#include "common/diagnostic.h"
#include "experiment/experiment.h"
#include "plugin/plugin_info.h"

namespace commbench {

std::vector<Diagnostic> check_against_plugins(const Experiment& exp, const PluginCatalog& plugins);

}  // namespace commbench
