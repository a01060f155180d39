// The arithmetic that turns every rank's per-iteration times into a record's series
// (measure/rank_aggregation.h): exact values, no timing involved.
#include <gtest/gtest.h>

#include <numeric>

#include "measure/rank_aggregation.h"

namespace commbench {
namespace {

double mean(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

// Rank 0 is fast and steady, rank 1 slow with one spike, rank 2 in between.
const std::vector<std::vector<double>> kTimes{{1, 1, 1, 1}, {4, 4, 8, 4}, {2, 3, 2, 3}};

TEST(RankAggregation, BatchAverageIsTheMeanOverRanksOfElapsedOverN) {
  const AggregatedTimes a = aggregate_ranks(kTimes, MeasureMethod::Batch, RankAggregation::Avg, -1);
  EXPECT_EQ(a.label, "avg");
  EXPECT_EQ(a.samples_us, (std::vector<double>{7.0 / 3, 8.0 / 3, 11.0 / 3, 8.0 / 3}));
  EXPECT_EQ(a.rank_mean_us, (std::vector<double>{1, 5, 2.5}));
  // nccl-tests' number: mean over ranks of (elapsed / N) = (1 + 5 + 2.5) / 3.
  EXPECT_DOUBLE_EQ(mean(a.samples_us), 8.5 / 3);
}

TEST(RankAggregation, BatchMinAndMaxTakeTheRankWithTheSmallestOrLargestElapsed) {
  const AggregatedTimes mx = aggregate_ranks(kTimes, MeasureMethod::Batch, RankAggregation::Max, -1);
  EXPECT_EQ(mx.label, "max");
  EXPECT_EQ(mx.samples_us, kTimes[1]);
  EXPECT_DOUBLE_EQ(mean(mx.samples_us), 5.0);
  const AggregatedTimes mn = aggregate_ranks(kTimes, MeasureMethod::Graph, RankAggregation::Min, -1);
  EXPECT_EQ(mn.label, "min");
  EXPECT_EQ(mn.samples_us, kTimes[0]);
}

TEST(RankAggregation, Rank0AndAFixedRankReportThatRanksClock) {
  EXPECT_EQ(aggregate_ranks(kTimes, MeasureMethod::Batch, RankAggregation::Rank0, -1).samples_us, kTimes[0]);
  const AggregatedTimes p2p = aggregate_ranks(kTimes, MeasureMethod::Batch, RankAggregation::Avg, 2);
  EXPECT_EQ(p2p.label, "rank2");
  EXPECT_EQ(p2p.samples_us, kTimes[2]);
}

TEST(RankAggregation, PerIterationTakesTheSlowestRankOfEachIteration) {
  const AggregatedTimes a = aggregate_ranks(kTimes, MeasureMethod::PerIteration, RankAggregation::Avg, 2);
  EXPECT_EQ(a.label, "slowest_per_iteration");
  EXPECT_EQ(a.samples_us, (std::vector<double>{4, 4, 8, 4}));
  // The mean of per-iteration maxima is at least the largest rank mean: never below max aggregation.
  EXPECT_GE(mean(a.samples_us), 5.0);
}

}  // namespace
}  // namespace commbench
