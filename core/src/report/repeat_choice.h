// Which record of a case measured in several repeats (`repeats`) the tables, scaling series and
// pair matrices show: one policy for all of them, so that no two outputs quote different repeats
// of the same case. The Python report follows the same rule (python/commbench/series.py).
#pragma once

#include <string>
#include <vector>

#include "measure/case_record.h"

namespace commbench {

// The rest of a case's identity beside run, backend, world size, op, size, dtype, redop,
// placement, memory, root and src/dst: a workload step's model, sharding, overlap and batch
// ("gpt-tiny ddp, overlap on, batch 6/rank"), a rooted op's root ("root 2"); "" for the others.
// Without it, an overlap-on step would stand beside an overlap-off step as if they were repeats.
std::string case_variant(const CaseRecord& r);

// The median repeat by mean time (the lower middle of an even count) of the measured ones; the
// first record when none was measured. `repeats` must not be empty.
const CaseRecord* median_repeat(std::vector<const CaseRecord*> repeats);

// Every case once, in order of first appearance: its median repeat.
std::vector<const CaseRecord*> one_per_case(const std::vector<const CaseRecord*>& records);
std::vector<const CaseRecord*> one_per_case(const std::vector<CaseRecord>& records);

}  // namespace commbench
