// summary.md's table of workload records (docs/workloads.md): one row per (backend, world size,
// model, sharding, overlap), the step's figures; and its memory records' table.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/case_record.h"

namespace commbench {

// Appends "### Workload steps" and its table when `cases` holds workload records; nothing else.
void append_workload_table(std::string& md, const std::vector<const CaseRecord*>& cases);

// Appends "### Memory" and its table when `memory` holds memory records (docs/output.md, "Memory
// records"): computed per rank next to measured, in MiB, as the console prints them.
void append_memory_table(std::string& md, const std::vector<const nlohmann::ordered_json*>& memory);

}  // namespace commbench
