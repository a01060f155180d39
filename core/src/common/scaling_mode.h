// How a run with several world sizes is read as a scaling experiment (issue 15, seed 004):
// `weak` keeps each rank's message size fixed, `strong` keeps the job's total size fixed and
// divides it among the ranks. report/scaling.h computes the efficiency; docs/metrics.md defines it.
#pragma once

#include <string_view>

namespace commbench {

enum class ScalingMode { Weak, Strong };

inline std::string_view scaling_name(ScalingMode m) { return m == ScalingMode::Strong ? "strong" : "weak"; }

}  // namespace commbench
