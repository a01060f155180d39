// A run as it will execute: its [[run]] layer over the [defaults] layer over built-in defaults,
// then the checks that need the whole run (sizes against dtypes, world sizes against ops, ...).
#pragma once

#include <optional>

#include "experiment/experiment.h"
#include "experiment/run_layer.h"
#include "experiment/toml_fields.h"

namespace commbench {

// Run number `index` (0-based). Nothing when the run has an error (all of them reported).
std::optional<RunSpec> resolve_run(const RunLayer& run, const RunLayer& defaults, int index,
                                   DiagnosticSink& sink);

}  // namespace commbench
