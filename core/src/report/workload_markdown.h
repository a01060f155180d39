// summary.md's table of workload records (docs/workloads.md): one row per (backend, world size,
// model, sharding, overlap), the step's figures.
#pragma once

#include <string>
#include <vector>

#include "measure/case_record.h"

namespace commbench {

// Appends "### Workload steps" and its table when `cases` holds workload records; nothing else.
void append_workload_table(std::string& md, const std::vector<const CaseRecord*>& cases);

}  // namespace commbench
