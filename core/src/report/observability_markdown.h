// summary.md's "Observability" section: idle-check warnings, thermal warm-ups, telemetry sources,
// and per case its temperature and clock ranges with throttling flagged (docs/observability.md).
#pragma once

#include <string>

#include "report/reporter.h"

namespace commbench {

// Appends nothing when the job asked for no telemetry, warm-up or profiler.
void append_observability_markdown(std::string& md, const JobResult& result);

}  // namespace commbench
