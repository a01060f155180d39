// Execution time limits: the run's `timeout` when given, otherwise one sized from the cases, so
// that gigabyte sweeps are not cut short by a limit meant for kilobytes.
#include <gtest/gtest.h>

#include "experiment/durations.h"
#include "experiment/experiment.h"
#include "plan/plan.h"

namespace commbench {
namespace {

std::vector<Execution> plan_of(const std::string& run_body) {
  const ParseResult r = parse_experiment_string("name = \"t\"\n[[run]]\nbackend = \"gloo\"\n" + run_body, "t.toml");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.format();
  return plan_job(*r.experiment);
}

TEST(PlanTimeout, GivenTimeoutIsKeptForEveryExecution) {
  for (const auto& e : plan_of("ops = [\"allreduce\"]\nsizes = [\"1GiB\"]\nworld_sizes = [2, 4]\ntimeout = \"90s\"\n"))
    EXPECT_DOUBLE_EQ(e.timeout_s, 90.0);
}

TEST(PlanTimeout, DefaultGrowsWithTheBytesMovedAndTheWorld) {
  const auto small = plan_of("ops = [\"allreduce\"]\nsizes = [\"4KiB\"]\nworld_size = 4\niterations = 20\nwarmup = 5\n");
  ASSERT_EQ(small.size(), 1u);
  EXPECT_GE(small[0].timeout_s, 600.0);
  EXPECT_LT(small[0].timeout_s, 601.0);  // 26 ops of 4 KiB: about 0.3 s on top of the floor
  const auto big = plan_of("ops = [\"allreduce\"]\nsizes = [\"1GiB\"]\nworld_size = 4\niterations = 20\nwarmup = 5\n");
  // 26 ops x (2 x 1 GiB / 50 MB/s + 10 ms) = 26 x 42.96 s on top of 600 s.
  EXPECT_NEAR(big[0].timeout_s, 600 + 26 * (2.0 * (1 << 30) / 50e6 + 0.01), 1e-6);
  const auto gathers = plan_of("ops = [\"allgather\"]\nsizes = [\"1GiB\"]\nworld_sizes = [2, 8]\n");
  ASSERT_EQ(gathers.size(), 2u);
  EXPECT_GT(gathers[1].timeout_s, gathers[0].timeout_s);  // allgather moves n blocks
}

TEST(PlanTimeout, DefaultIsCappedLikeAWrittenTimeout) {
  // 2^60 bytes at 50 MB/s is 730 years: uncapped, the deadline overflows steady_clock.
  const auto huge = plan_of("ops = [\"allreduce\"]\nsizes = [\"1048576TiB\"]\nworld_size = 2\n");
  ASSERT_EQ(huge.size(), 1u);
  EXPECT_DOUBLE_EQ(huge[0].timeout_s, kMaxDurationS);
}

}  // namespace
}  // namespace commbench
