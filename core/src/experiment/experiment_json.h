// The canonical JSON form of a parsed experiment (Experiment::as_parsed, recorded in
// summary.json): every default applied, sizes as integers with the text they were written as,
// durations in seconds, enums by name.
#pragma once

#include <nlohmann/json.hpp>

#include "experiment/experiment.h"

namespace commbench {

nlohmann::json run_to_json(const RunSpec& run);
nlohmann::json experiment_to_json(const Experiment& exp);

}  // namespace commbench
