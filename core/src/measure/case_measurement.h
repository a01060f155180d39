// One case's timed rounds and the record's series made from them (docs/metrics.md, "Methods"):
// what run_case measures once the buffers, the executor and the warm-up are in place.
#pragma once

#include <string>

#include "measure/case_runner.h"
#include "measure/op_executor.h"
#include "measure/rank_aggregation.h"
#include "stats/summary.h"

namespace commbench {

// The record's series and every rank's mean over all rounds so far, complete on rank 0 only.
struct Measured {
  AggregatedTimes times;
  SampleSummary summary;
  int iterations = 0;
  bool cv_reached = false;
};

// Rounds of `iters` iterations: one, or with target_cv as many as it takes for the CV of the
// record's series to drop below the target, capped by max_iterations and max_time. Rank 0
// decides and tells the others (every rank must run the same number of collectives).
Measured measure_case(CaseEnvironment& env, OpExecutor& exec, int iters, const std::string& case_name);

}  // namespace commbench
