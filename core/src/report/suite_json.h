// summary.json's "suite" section: the job's records grouped as seed 004 groups its JSON
// (issue 15 §4; docs/output.md, "suite"): `communication` (case records by op), `training`
// (workload step records), `memory` (memory records) and `scaling` (scaling series). A view:
// every record stays in results.jsonl and in summary.json's "results" / "records".
#pragma once

#include <nlohmann/json.hpp>

#include "report/reporter.h"

namespace commbench {

// The record kinds the suite groups, as results.jsonl's "type" writes them.
inline constexpr const char* kTrainingKind = "training";
inline constexpr const char* kMemoryKind = "memory";

// `scaling`: summary.json's "scaling" array, repeated under the suite.
nlohmann::ordered_json suite_json(const JobResult& result, const nlohmann::ordered_json& scaling);

}  // namespace commbench
