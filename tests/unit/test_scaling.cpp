// Scaling efficiency (report/scaling.h) against numbers worked out by hand from the records,
// and strong scaling's division of sizes in the planner.
#include <gtest/gtest.h>

#include <tuple>

#include "experiment/experiment.h"
#include "plan/plan.h"
#include "report/scaling.h"
#include "report/summary_json_reporter.h"
#include "test_report_helpers.h"

namespace commbench {
namespace {
using test::make_case;

TEST(Scaling, WeakEfficiencyIsBaseTimeOverTime) {
  // 1 MiB per rank: 100 us at 2 ranks, 125 us at 4, 200 us at 8.
  std::vector<CaseRecord> recs{make_case("gloo", "allreduce", 1 << 20, 100, 2),
                               make_case("gloo", "allreduce", 1 << 20, 125, 4),
                               make_case("gloo", "allreduce", 1 << 20, 200, 8)};
  const auto series = scaling_series(recs, {});
  ASSERT_EQ(series.size(), 1u);
  const ScalingSeries& s = series[0];
  EXPECT_EQ(s.base_world_size, 2);
  EXPECT_EQ(s.bytes, 1u << 20);
  ASSERT_EQ(s.points.size(), 3u);
  // throughput = N x bytes / time: 2 x 1048576 B / 100 us = 20.97152 GB/s
  EXPECT_NEAR(s.points[0].throughput_gbps, 2.0 * 1048576 / 100 / 1e3, 1e-9);
  EXPECT_DOUBLE_EQ(s.points[0].efficiency, 1.0);
  // (thr4 / thr2) / (4 / 2) = ((4/125) / (2/100)) / 2 = 100 / 125
  EXPECT_NEAR(s.points[1].efficiency, 0.8, 1e-12);
  EXPECT_NEAR(s.points[2].efficiency, 0.5, 1e-12);
}

TEST(Scaling, WithRepeatsEachWorldSizeTakesItsMedianRepeat) {
  // Repeats at 4 ranks of 300, 125 and 150 us: the efficiency once used repeat 0 (300 us) while
  // the comparison table showed the median (150 us).
  std::vector<CaseRecord> recs{make_case("gloo", "allreduce", 1 << 20, 100, 2)};
  int repeat = 0;
  for (double t : {300.0, 125.0, 150.0}) {
    recs.push_back(make_case("gloo", "allreduce", 1 << 20, t, 4));
    recs.back().repeat = repeat++;
  }
  const auto series = scaling_series(recs, {});
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].points.size(), 2u);
  EXPECT_DOUBLE_EQ(series[0].points[1].time_us, 150.0);
  EXPECT_NEAR(series[0].points[1].efficiency, 100.0 / 150.0, 1e-12);
}

TEST(Scaling, StrongSendrecvDividesTheRingsTotalAmongTheRanks) {
  // 12 KiB in total: 6 KiB per rank at 2 ranks, 3 KiB at 4. A ring that halves its time scales
  // perfectly; sendrecv once kept 12 KiB per rank and scored 50 %.
  EXPECT_EQ(strong_scaling_share(OpKind::SendRecvRing, 4), 4u);
  std::vector<CaseRecord> recs{make_case("ucx", "sendrecv", 6 << 10, 100, 2), make_case("ucx", "sendrecv", 3 << 10, 50, 4)};
  const auto series = scaling_series(recs, {{0, ScalingMode::Strong}});
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].bytes, 12u << 10);
  ASSERT_EQ(series[0].points.size(), 2u);
  EXPECT_NEAR(series[0].points[1].efficiency, 1.0, 1e-12);
}

TEST(Scaling, StrongEfficiencyDividesBySpeedup) {
  // 8 MiB in total of allgather: 4 MiB per rank at 2 ranks, 2 MiB at 4, 1 MiB at 8 (plan.cpp).
  std::vector<CaseRecord> recs{make_case("gloo", "allgather", 4 << 20, 400, 2),
                               make_case("gloo", "allgather", 2 << 20, 250, 4),
                               make_case("gloo", "allgather", 1 << 20, 200, 8)};
  for (auto& r : recs) r.run_index = 3;
  const auto series = scaling_series(recs, {{3, ScalingMode::Strong}});
  ASSERT_EQ(series.size(), 1u);
  const ScalingSeries& s = series[0];
  EXPECT_EQ(s.mode, ScalingMode::Strong);
  EXPECT_EQ(s.bytes, 8u << 20);
  ASSERT_EQ(s.points.size(), 3u);
  // throughput = total / time; efficiency = (400 / 250) / 2 = 0.8 and (400 / 200) / 4 = 0.5
  EXPECT_NEAR(s.points[0].throughput_gbps, 8.0 * 1048576 / 400 / 1e3, 1e-9);
  EXPECT_NEAR(s.points[1].efficiency, 0.8, 1e-12);
  EXPECT_NEAR(s.points[2].efficiency, 0.5, 1e-12);
}

TEST(Scaling, OnlyMeasuredCasesAtTwoOrMoreWorldSizesCount) {
  CaseRecord failed = make_case("gloo", "allreduce", 1024, 30, 4);
  failed.status = "failed";
  std::vector<CaseRecord> recs{make_case("gloo", "allreduce", 1024, 10, 2), failed,
                               make_case("ucx", "allreduce", 1024, 10, 2),  // one world size
                               make_case("gloo", "barrier", 0, 5, 2), make_case("gloo", "barrier", 0, 9, 4)};
  EXPECT_TRUE(scaling_series(recs, {}).empty());
}

TEST(Scaling, TwoPeerPatternsHaveNoScalingButRingAndPairedPatternsDo) {
  // pingpong, unidir_bw, bidir_bw run between two ranks whatever the world: an "efficiency" of
  // them across world sizes (once 92 %) measured nothing. sendrecv and msg_rate use every rank.
  std::vector<CaseRecord> recs;
  for (const char* op : {"pingpong", "unidir_bw", "bidir_bw", "sendrecv", "msg_rate"})
    for (int n : {2, 4}) recs.push_back(make_case("gloo", op, 4096, 10.0 * n, n));
  const auto series = scaling_series(recs, {});
  std::vector<std::string> ops;
  for (const auto& s : series) ops.push_back(s.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"sendrecv", "msg_rate"}));
}

// msg_rate's throughput is its ⌊N/2⌋ pairs' messages (its algbw), not N ranks' (it once printed
// twice its own algbw); at an odd world one rank sits out and the efficiency shows it.
TEST(Scaling, MsgRateCountsItsPairs) {
  std::vector<CaseRecord> recs{make_case("gloo", "msg_rate", 4096, 10, 2), make_case("gloo", "msg_rate", 4096, 10, 3),
                               make_case("gloo", "msg_rate", 4096, 10, 4)};
  const auto series = scaling_series(recs, {});
  ASSERT_EQ(series.size(), 1u);
  const auto& p = series[0].points;
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NEAR(p[0].throughput_gbps, 1.0 * 4096 / 10 / 1e3, 1e-12);  // one pair
  EXPECT_NEAR(p[1].efficiency, 2.0 / 3.0, 1e-12);                    // still one pair, 3 ranks
  EXPECT_NEAR(p[2].efficiency, 1.0, 1e-12);                          // two pairs, same time
}

// One rank communicates with no one: an in-place allreduce at 1 rank took 0.2 µs on a GPU whatever
// its size, and as the base it made every efficiency a fraction of a percent. Ops scale from 2
// ranks; a workload (compute at 1 rank is real work, seed 004's formula) still from 1.
TEST(Scaling, OpsScaleFromTwoRanks) {
  std::vector<CaseRecord> recs{make_case("gloo", "allreduce", 1 << 20, 0.2, 1), make_case("gloo", "allreduce", 1 << 20, 100, 2),
                               make_case("gloo", "allreduce", 1 << 20, 125, 4)};
  const auto series = scaling_series(recs, {});
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].base_world_size, 2);
  ASSERT_EQ(series[0].points.size(), 2u);
  EXPECT_NEAR(series[0].points[1].efficiency, 0.8, 1e-12);
  // Only 1 and 2 ranks: one point left, no series.
  EXPECT_TRUE(scaling_series({recs[0], recs[1]}, {}).empty());
}

TEST(Scaling, SummaryJsonCarriesTheSeriesWithTheRunsMode) {
  JobInfo job;
  job.experiment_json = {{"runs", {{{"index", 0}, {"scaling", "strong"}}}}};
  JobResult result;
  result.cases = {make_case("gloo", "allgather", 1024, 10, 2), make_case("gloo", "allgather", 512, 10, 4)};
  const auto doc = make_summary_json(job, result);
  ASSERT_EQ(doc.at("scaling").size(), 1u);
  const auto& s = doc.at("scaling").at(0);
  EXPECT_EQ(s.at("mode"), "strong");
  EXPECT_EQ(s.at("bytes"), 2048);
  EXPECT_EQ(s.at("base_world_size"), 2);
  EXPECT_NEAR(s.at("points").at(1).at("efficiency").get<double>(), 0.5, 1e-12);
}

TEST(Scaling, StrongSizesAreDividedAmongTheRanksByTheOp) {
  ParseResult r = parse_experiment_string(
      "name = \"s\"\n[[run]]\nbackend = \"gloo\"\nops = [\"allreduce\", \"allgather\"]\n"
      "sizes = [\"64KiB\"]\nworld_sizes = [1, 2, 4]\nscaling = \"strong\"\n",
      "s.toml");
  ASSERT_TRUE(r.experiment) << r.diagnostics.at(0).format();
  const auto plan = plan_job(*r.experiment);
  ASSERT_EQ(plan.size(), 3u);
  for (const Execution& e : plan) {
    for (const CaseSpec& c : e.cases) {
      // allreduce's buffer is the job's data on every rank; allgather's is one rank's share.
      const uint64_t want = c.op == OpKind::Allgather ? 65536u / static_cast<uint64_t>(e.world_size) : 65536u;
      EXPECT_EQ(c.bytes, want) << op_info(c.op).name << " at " << e.world_size;
      EXPECT_EQ(c.count, c.bytes / 4);
    }
  }
}

// The advice once came from the first world size that did not divide (12 B at 2 ranks: "a
// multiple of 8 bytes"), which 4 ranks refused again: it is the multiple that suits them all.
TEST(Scaling, StrongSizeThatDoesNotDivideIsAnErrorAtTheSize) {
  ParseResult r = parse_experiment_string(
      "name = \"s\"\n[[run]]\nbackend = \"gloo\"\nop = \"allgather\"\n"
      "sizes = [\"4KiB\", 12]\nworld_sizes = [2, 4]\nscaling = \"strong\"\n",
      "s.toml");
  ASSERT_FALSE(r.experiment);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].pos.line, 5);
  EXPECT_NE(r.diagnostics[0].message.find("use a multiple of 16 bytes (whole elements for every op, dtype and world size of the run)"), std::string::npos)
      << r.diagnostics[0].message;
}

// A review: the multiple that suits world sizes 1..47 is above 2^64 (std::lcm's overflow is
// undefined); past 2^48 the advice is the misfit's own multiple, and says why.
TEST(Scaling, StrongAdviceBeyondAnySizeFallsBackToTheMisfitsMultiple) {
  std::string worlds;
  for (int w = 1; w <= 47; ++w) worlds += (w > 1 ? ", " : "") + std::to_string(w);
  ParseResult r = parse_experiment_string(
      "name = \"s\"\n[[run]]\nbackend = \"gloo\"\nop = \"allgather\"\nsizes = [\"4KiB\"]\nworld_sizes = [" + worlds +
          "]\nscaling = \"strong\"\n",
      "s.toml");
  ASSERT_FALSE(r.experiment);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_NE(r.diagnostics[0].message.find("at world size 3, which is not a whole number of f32 elements: use a "
                                          "multiple of 12 bytes for this one (no size suits every world size of the "
                                          "run: split them into runs)"),
            std::string::npos)
      << r.diagnostics[0].message;
}

// A strong-scaled resnet50 data_parallel run on gloo; `keys` from line 6 on.
ParseResult strong_workload(const std::string& keys) {
  return parse_experiment_string("name = \"s\"\n[[run]]\nbackend = \"gloo\"\nworkload = \"data_parallel\"\n"
                                 "model = \"resnet50\"\nscaling = \"strong\"\n" + keys, "s.toml");
}

// A data-parallel workload with scaling = "strong": batch_size is the global batch and compute_ms
// the compute of its step on one rank; each execution gets 1/N of both.
TEST(Scaling, StrongWorkloadSplitsTheGlobalBatchAndTheComputeAmongTheRanks) {
  ParseResult r = strong_workload("batch_size = 64\ncompute_ms = 80\nworld_sizes = [1, 2, 4]\n");
  ASSERT_TRUE(r.experiment) << r.diagnostics.at(0).format();
  const auto plan = plan_job(*r.experiment);
  ASSERT_EQ(plan.size(), 3u);
  for (const Execution& e : plan) {
    EXPECT_EQ(e.batch_size * e.world_size, 64) << e.world_size;
    EXPECT_DOUBLE_EQ(e.compute_ms * e.world_size, 80.0) << e.world_size;
  }
}

TEST(Scaling, StrongWorkloadBatchThatDoesNotDivideIsAnErrorAtTheBatch) {
  ParseResult r = strong_workload("batch_size = 6\nworld_sizes = [2, 4]\n");
  ASSERT_FALSE(r.experiment);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].pos.line, 7);  // batch_size
  EXPECT_NE(r.diagnostics[0].message.find("world size 4 does not divide it"), std::string::npos)
      << r.diagnostics[0].message;
}

// Strong-scaled workload records (global batch 64: 64, 32, 16 per rank): one series keyed by the
// global batch; efficiency = (samples/s(N) / samples/s(1)) / N = t1 / (N · tN).
TEST(Scaling, StrongWorkloadEfficiencyIsBaseStepOverNTimesStep) {
  std::vector<CaseRecord> records;
  for (auto [world, step_s] : {std::pair{1, 0.8}, {2, 0.5}, {4, 0.25}})
    records.push_back(test::make_workload_case(world, 64 / world, 64 / step_s, step_s * 1e6));
  const auto series = scaling_series(records, {{0, ScalingMode::Strong}});
  ASSERT_EQ(series.size(), 1u);
  const ScalingSeries& s = series[0];
  EXPECT_EQ(s.mode, ScalingMode::Strong);
  EXPECT_EQ(s.batch_size, 64);
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_DOUBLE_EQ(s.points[0].efficiency, 1.0);
  EXPECT_NEAR(s.points[1].efficiency, 0.8 / (2 * 0.5), 1e-12);   // 0.8
  EXPECT_NEAR(s.points[2].efficiency, 0.8 / (4 * 0.25), 1e-12);  // 0.8
  EXPECT_NE(describe_scaling(s).find("strong scaling of batch 64 in total"), std::string::npos) << describe_scaling(s);
  // The same records read as weak scaling are three series of one point each: none is kept.
  EXPECT_TRUE(scaling_series(records, {}).empty());
}

// A workload's point time is its step p50, the one samples/s (and so the efficiency) comes from,
// not the record's mean: a reader recomputes the efficiency from the times printed beside it.
TEST(Scaling, WorkloadPointTimeIsTheStepTheEfficiencyComesFrom) {
  std::vector<CaseRecord> records;
  for (auto [world, p50_ms, mean_ms] : {std::tuple{1, 20.0, 21.0}, {2, 25.0, 32.0}}) {
    records.push_back(test::make_workload_case(world, 32, 32.0 * world / (p50_ms / 1e3), mean_ms * 1e3));
    records.back().workload["step_ms"] = {{"p50", p50_ms}, {"mean", mean_ms}};
  }
  const auto series = scaling_series(records, {});
  ASSERT_EQ(series.size(), 1u);
  const auto& pts = series[0].points;
  ASSERT_EQ(pts.size(), 2u);
  EXPECT_DOUBLE_EQ(pts[0].time_us, 20000.0);
  EXPECT_DOUBLE_EQ(pts[1].time_us, 25000.0);
  EXPECT_NEAR(pts[1].efficiency, pts[0].time_us / pts[1].time_us, 1e-12);  // weak: step(1) / step(2)
}

}  // namespace
}  // namespace commbench
