// summary.json's "suite" section: the job's records grouped as seed 004 groups its JSON
// (issue 15 §4; docs/output.md, "suite"): `communication` (op case records by op), `training`
// (the data_parallel case records, without their per-sample arrays), `memory` (memory records) and `scaling` (scaling series). A view:
// every record stays in results.jsonl and in summary.json's "results" / "records".
#pragma once

#include <nlohmann/json.hpp>

#include "report/reporter.h"

namespace commbench {

// The case records of data-parallel steps have this op (docs/workloads.md); the memory records
// this results.jsonl type.
inline constexpr const char* kTrainingOp = "data_parallel";
inline constexpr const char* kMemoryKind = "memory";

// `scaling`: summary.json's "scaling" array, repeated under the suite.
nlohmann::ordered_json suite_json(const JobResult& result, const nlohmann::ordered_json& scaling);

}  // namespace commbench
