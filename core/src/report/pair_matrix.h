// The all_pairs sweep as src x dst matrices, one bandwidth and one latency table per size
// (seed 003: asymmetric links show up as a matrix that is not symmetric).
#pragma once

#include <string>
#include <vector>

#include "measure/case_record.h"

namespace commbench {

// Appends, for each (backend, world size, size, dtype) among the all_pairs records (src >= 0), a
// matrix of algbw (GB/s, from the mean time) and one of p50 time (us). Cells of pairs that were
// not measured say why; the diagonal is "·".
void append_pair_matrices(std::string& md, const std::vector<const CaseRecord*>& cases);

}  // namespace commbench
