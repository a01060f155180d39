// From every rank's per-iteration times to the record's one series (docs/metrics.md, "Methods").
// Pure arithmetic, so that a test can check it exactly.
#pragma once

#include <string>
#include <vector>

#include "common/timing_method.h"

namespace commbench {

struct AggregatedTimes {
  std::vector<double> samples_us;    // one series; its mean is the record's time
  std::vector<double> rank_mean_us;  // each rank's own mean (0 for ranks that report nothing)
  std::string label;                 // the record's `rank_aggregation`
};

// `per_rank[r]` holds rank r's samples (all ranks the same count). `fixed_rank` >= 0 makes the
// series that rank's own (point-to-point patterns in batch: the initiator's clock, as OSU).
//  - per_iteration: samples[i] = max over ranks of per_rank[r][i] ("slowest_per_iteration");
//  - batch/graph, avg: samples[i] = mean over ranks of per_rank[r][i], so the series' mean is
//    the mean over ranks of each rank's elapsed / N (nccl-tests' default);
//  - batch/graph, min/max: the series of the rank with the smallest/largest mean, so the
//    series' mean is min/max over ranks of each rank's elapsed / N (nccl-tests -a 2/3);
//  - rank0 (or fixed_rank): that rank's series ("rank<N>").
AggregatedTimes aggregate_ranks(const std::vector<std::vector<double>>& per_rank,
                                MeasureMethod method, RankAggregation aggregation, int fixed_rank);

}  // namespace commbench
