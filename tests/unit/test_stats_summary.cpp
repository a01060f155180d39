#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "stats/summary.h"

namespace commbench {
namespace {

TEST(StatsSummarize, HandComputedFourSamples) {
  const std::vector<double> x{4, 1, 3, 2};  // unsorted on purpose
  const SampleSummary s = summarize(x);
  EXPECT_EQ(s.n, 4u);
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 4);
  EXPECT_DOUBLE_EQ(s.p50, 2.5);   // rank 1.5: halfway between 2 and 3
  EXPECT_DOUBLE_EQ(s.p95, 3.85);  // rank 2.85: 3 + 0.85 * (4 - 3)
  EXPECT_DOUBLE_EQ(s.p99, 3.97);  // rank 2.97
  // Sample variance: (1.5^2 + 0.5^2 + 0.5^2 + 1.5^2) / 3 = 5/3.
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(5.0 / 3.0));
  EXPECT_DOUBLE_EQ(s.cv, std::sqrt(5.0 / 3.0) / 2.5);
}

TEST(StatsSummarize, HandComputedThreeSamples) {
  const std::vector<double> x{10, 1, 7};
  const SampleSummary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.p50, 7);
  EXPECT_DOUBLE_EQ(s.p95, 9.7);   // rank 1.9: 7 + 0.9 * 3
  EXPECT_DOUBLE_EQ(s.p99, 9.94);  // rank 1.98: 7 + 0.98 * 3
  EXPECT_DOUBLE_EQ(s.mean, 6);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt((16.0 + 25.0 + 1.0) / 2.0));
}

TEST(StatsSummarize, SingleSampleHasNoSpread) {
  const std::vector<double> x{42.5};
  const SampleSummary s = summarize(x);
  EXPECT_EQ(s.n, 1u);
  EXPECT_DOUBLE_EQ(s.mean, 42.5);
  EXPECT_DOUBLE_EQ(s.p50, 42.5);
  EXPECT_DOUBLE_EQ(s.p99, 42.5);
  EXPECT_DOUBLE_EQ(s.stddev, 0);
  EXPECT_DOUBLE_EQ(s.cv, 0);
}

TEST(StatsSummarize, EmptyIsAllZero) {
  const SampleSummary s = summarize({});
  EXPECT_EQ(s.n, 0u);
  EXPECT_EQ(s.mean, 0);
  EXPECT_EQ(s.max, 0);
  EXPECT_EQ(percentile({}, 0.5), 0);
}

TEST(StatsSummarize, ZeroMeanGivesZeroCv) {
  const std::vector<double> x{-1, 1};
  const SampleSummary s = summarize(x);
  EXPECT_DOUBLE_EQ(s.mean, 0);
  EXPECT_GT(s.stddev, 0);
  EXPECT_EQ(s.cv, 0);
}

TEST(StatsSummarize, VarianceKeepsPrecisionForLargeCloseValues) {
  // One-pass sum-of-squares would lose everything here; two-pass keeps it.
  const std::vector<double> x{1e9 + 1, 1e9 + 2, 1e9 + 3};
  EXPECT_NEAR(summarize(x).stddev, 1.0, 1e-6);
}

TEST(StatsPercentile, EndpointsAreMinAndMaxAndQIsClamped) {
  const std::vector<double> x{5, 3, 9, 1};
  EXPECT_DOUBLE_EQ(percentile(x, 0), 1);
  EXPECT_DOUBLE_EQ(percentile(x, 1), 9);
  EXPECT_DOUBLE_EQ(percentile(x, -0.5), 1);
  EXPECT_DOUBLE_EQ(percentile(x, 7), 9);
}

// Independent of the implementation: finds the k-th smallest by counting, without sorting.
double kth_smallest(const std::vector<double>& x, size_t k) {
  for (double candidate : x) {
    size_t less = 0, equal = 0;
    for (double y : x) {
      less += y < candidate;
      equal += y == candidate;
    }
    if (less <= k && k < less + equal) return candidate;
  }
  ADD_FAILURE() << "no k-th element";
  return 0;
}

double brute_force_percentile(const std::vector<double>& x, double q) {
  const double rank = q * static_cast<double>(x.size() - 1);
  const size_t lo = static_cast<size_t>(rank);
  const double frac = rank - static_cast<double>(lo);
  const double a = kth_smallest(x, lo);
  const double b = lo + 1 < x.size() ? kth_smallest(x, lo + 1) : a;
  return a + frac * (b - a);
}

TEST(StatsPercentile, MatchesBruteForceOnRandomInputs) {
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int> size(1, 60);
  std::lognormal_distribution<double> latency(3.0, 0.5);  // timing-like, positive, skewed
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<double> x(static_cast<size_t>(size(rng)));
    for (auto& v : x) v = latency(rng);
    if (trial % 5 == 0) x.push_back(x.front());  // duplicates too
    for (double q : {0.0, 0.01, 0.25, 0.5, 0.95, 0.99, 1.0})
      ASSERT_NEAR(percentile(x, q), brute_force_percentile(x, q), 1e-9)
          << "trial " << trial << " n=" << x.size() << " q=" << q;
    const SampleSummary s = summarize(x);
    ASSERT_NEAR(s.p95, brute_force_percentile(x, 0.95), 1e-9);
    ASSERT_DOUBLE_EQ(s.min, *std::min_element(x.begin(), x.end()));
    ASSERT_DOUBLE_EQ(s.max, *std::max_element(x.begin(), x.end()));
    ASSERT_LE(s.p50, s.p95);
    ASSERT_LE(s.p95, s.p99);
  }
}

TEST(StatsSummaryJson, RoundTripKeepsEveryField) {
  const std::vector<double> x{3, 1, 4, 1, 5, 9, 2, 6};
  const SampleSummary s = summarize(x);
  const nlohmann::json j = s;
  for (const char* key : {"n", "mean", "min", "p50", "p95", "p99", "max", "stddev", "cv"})
    EXPECT_TRUE(j.contains(key)) << key;
  const auto back = nlohmann::json::parse(j.dump()).get<SampleSummary>();
  EXPECT_EQ(back.n, s.n);
  EXPECT_DOUBLE_EQ(back.mean, s.mean);
  EXPECT_DOUBLE_EQ(back.min, s.min);
  EXPECT_DOUBLE_EQ(back.p50, s.p50);
  EXPECT_DOUBLE_EQ(back.p95, s.p95);
  EXPECT_DOUBLE_EQ(back.p99, s.p99);
  EXPECT_DOUBLE_EQ(back.max, s.max);
  EXPECT_DOUBLE_EQ(back.stddev, s.stddev);
  EXPECT_DOUBLE_EQ(back.cv, s.cv);
}

TEST(StatsSummaryJson, OrderedFlavourHasTheSameContentInDeclarationOrder) {
  const std::vector<double> x{1, 2};
  const nlohmann::ordered_json o = summarize(x);
  const nlohmann::json plain = summarize(x);
  EXPECT_EQ(nlohmann::json::parse(o.dump()), plain);
  EXPECT_EQ(o.begin().key(), "n");
}

TEST(StatsSummaryJson, MissingAndNullFieldsReadAsZero) {
  const auto s = nlohmann::json::parse(R"({"mean": 2.5, "p99": null})").get<SampleSummary>();
  EXPECT_DOUBLE_EQ(s.mean, 2.5);
  EXPECT_EQ(s.p99, 0);
  EXPECT_EQ(s.n, 0u);
}

}  // namespace
}  // namespace commbench
