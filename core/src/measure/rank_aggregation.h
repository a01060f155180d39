// From every rank's per-iteration times to the record's one series (docs/metrics.md, "Methods").
// The rule is defined once (series_rule); aggregate_ranks applies it to every rank's samples in
// one place, so that a test can check the arithmetic exactly, and the case runner applies it with
// a reduction in the bootstrap, so that rank 0 never holds every rank's samples
// (measure/case_measurement.cpp).
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

// `fixed_rank` >= 0 makes the series that rank's own (point-to-point patterns in batch: the
// initiator's clock, as OSU).
//  - SlowestPerIteration (per_iteration): samples[i] = max over ranks of rank r's sample i;
//  - MeanPerIteration (batch/graph, avg): samples[i] = mean over ranks of sample i, so the
//    series' mean is the mean over ranks of each rank's elapsed / N (nccl-tests' default);
//  - RankByMean (batch/graph, min/max): the series of the rank with the smallest/largest mean
//    (the lowest such rank on a tie), so the series' mean is min/max over ranks of each rank's
//    elapsed / N (nccl-tests -a 2/3);
//  - OneRank (rank0, or fixed_rank within the world): that rank's series ("rank<N>").
struct SeriesRule {
  enum class Kind { SlowestPerIteration, MeanPerIteration, RankByMean, OneRank } kind = Kind::MeanPerIteration;
  int rank = 0;           // OneRank
  bool smallest = false;  // RankByMean: min, else max
  std::string label;
};
SeriesRule series_rule(MeasureMethod method, RankAggregation aggregation, int fixed_rank, int world);
// RankByMean's rank, from every rank's mean.
int rank_by_mean(const std::vector<double>& rank_mean_us, bool smallest);

// `per_rank[r]` holds rank r's samples (all ranks the same count).
AggregatedTimes aggregate_ranks(const std::vector<std::vector<double>>& per_rank,
                                MeasureMethod method, RankAggregation aggregation, int fixed_rank);

}  // namespace commbench
