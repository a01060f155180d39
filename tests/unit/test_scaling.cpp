// Scaling efficiency (report/scaling.h) against numbers worked out by hand from the records,
// and strong scaling's division of sizes in the planner.
#include <gtest/gtest.h>

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

TEST(Scaling, StrongEfficiencyDividesBySpeedup) {
  // 4 MiB in total of allgather: 4 MiB per rank at 1 rank, 2 MiB at 2, 1 MiB at 4 (plan.cpp).
  std::vector<CaseRecord> recs{make_case("gloo", "allgather", 4 << 20, 400, 1),
                               make_case("gloo", "allgather", 2 << 20, 250, 2),
                               make_case("gloo", "allgather", 1 << 20, 200, 4)};
  for (auto& r : recs) r.run_index = 3;
  const auto series = scaling_series(recs, {{3, ScalingMode::Strong}});
  ASSERT_EQ(series.size(), 1u);
  const ScalingSeries& s = series[0];
  EXPECT_EQ(s.mode, ScalingMode::Strong);
  EXPECT_EQ(s.bytes, 4u << 20);
  ASSERT_EQ(s.points.size(), 3u);
  // throughput = total / time; efficiency = (400 / 250) / 2 = 0.8 and (400 / 200) / 4 = 0.5
  EXPECT_NEAR(s.points[0].throughput_gbps, 4.0 * 1048576 / 400 / 1e3, 1e-9);
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

TEST(Scaling, SummaryJsonCarriesTheSeriesWithTheRunsMode) {
  JobInfo job;
  job.experiment_json = {{"runs", {{{"index", 0}, {"scaling", "strong"}}}}};
  JobResult result;
  result.cases = {make_case("gloo", "allgather", 2048, 10, 1), make_case("gloo", "allgather", 1024, 10, 2)};
  const auto doc = make_summary_json(job, result);
  ASSERT_EQ(doc.at("scaling").size(), 1u);
  const auto& s = doc.at("scaling").at(0);
  EXPECT_EQ(s.at("mode"), "strong");
  EXPECT_EQ(s.at("bytes"), 2048);
  EXPECT_EQ(s.at("base_world_size"), 1);
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

TEST(Scaling, StrongSizeThatDoesNotDivideIsAnErrorAtTheSize) {
  ParseResult r = parse_experiment_string(
      "name = \"s\"\n[[run]]\nbackend = \"gloo\"\nop = \"allgather\"\n"
      "sizes = [\"4KiB\", 12]\nworld_sizes = [2, 4]\nscaling = \"strong\"\n",
      "s.toml");
  ASSERT_FALSE(r.experiment);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].pos.line, 5);
  EXPECT_NE(r.diagnostics[0].message.find("use a multiple of 8 bytes"), std::string::npos)
      << r.diagnostics[0].message;
}

}  // namespace
}  // namespace commbench
