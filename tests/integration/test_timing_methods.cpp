// The timing methods through the real runner, on the `sleep` test plugin whose allreduce takes a
// known, per-rank time and talks to no other rank (tests/plugins/sleep): each method and rank
// aggregation must report what the arithmetic says. A correctness test of the arithmetic, not a
// timed test of speed: lower bounds are exact (a sleep never ends early), upper bounds allow for
// the plugin's oversleep on a loaded machine.
#include <gtest/gtest.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

constexpr double kFast = 2000, kSlow = 6000;  // rank 0's and rank 1's allreduce, microseconds
constexpr int kIters = 40;

std::string sleep_experiment(const std::string& runs,
                             const std::string& options = "{ sleep_us_rank0 = 2000, sleep_us_rank1 = 6000 }") {
  return std::string(R"(name = "methods"
plugin_path = [")") + COMMBENCH_TEST_PLUGIN_DIR + R"("]
[defaults]
backend = "sleep"
ops = ["allreduce"]
sizes = [64]
world_size = 2
warmup = 2
iterations = 40
check = false
options.sleep = )" + options + "\n" + runs;
}

const nlohmann::json& by_run(const std::vector<nlohmann::json>& cases, const std::string& run) {
  for (const auto& c : cases)
    if (c["run"] == run) return c;
  throw std::runtime_error("no record of run " + run);
}

double mean_of(const nlohmann::json& samples) {
  const auto v = samples.get<std::vector<double>>();
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

// One job of the five runs below. What must hold whatever the load (lower bounds: an op of N µs
// cannot be timed shorter; the arithmetic of each aggregation) is checked here; the upper bounds,
// which a busy machine can break by oversleeping, are returned as the list of misses.
// How late this machine wakes from an absolute-deadline sleep of `period_us` right now, per sleep:
// the plugin's oversleep, measured the way it sleeps, as the reference for the upper bounds.
double oversleep_us(double period_us, int n = 20) {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    t.tv_nsec += static_cast<long>(period_us * 1000);
    while (t.tv_nsec >= 1000000000L) {
      t.tv_nsec -= 1000000000L;
      ++t.tv_sec;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, nullptr) != 0) {
    }
  }
  const double elapsed_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return std::max(0.0, elapsed_us / n - period_us);
}

std::vector<std::string> run_methods_once() {
  // The reference, measured just before the job: what this machine adds to a bare sleep now. A
  // batch catches up its lateness (absolute deadlines), so it gets it once; per_iteration pays
  // it every iteration and after every barrier, so three times.
  const double late_us = oversleep_us(kSlow), late_per_iteration_us = 3 * late_us;
  JobDir dir;
  const CommandResult r = dir.run(dir.write("m.toml", sleep_experiment(R"(
[[run]]
name = "batch-avg"
[[run]]
name = "batch-max"
rank_aggregation = "max"
[[run]]
name = "batch-min"
rank_aggregation = "min"
[[run]]
name = "batch-rank0"
rank_aggregation = "rank0"
[[run]]
name = "per-iteration"
method = "per_iteration"
)")));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Every table header names the method, the aggregation and the clock.
  EXPECT_NE(r.output.find("method batch (N iterations back to back; per rank elapsed/N, ranks: avg;"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("method per_iteration (synchronised start of each iteration; slowest rank per iteration) | clock host"),
            std::string::npos) << r.output;
  const auto cases = dir.records();
  EXPECT_EQ(cases.size(), 5u);
  if (cases.size() != 5u) return {};
  std::vector<std::string> late;
  auto at_most = [&](double value, double bound, const nlohmann::json& c, const char* what) {
    if (value > bound) late.push_back(fmt::format("{} {}: {:.0f} us > {:.0f} us", c["run"].get<std::string>(), what, value, bound));
  };
  // Upper bound per op: the plugin's oversleep, caught up within a batch (one lateness over
  // kIters ops) but paid once per iteration after every barrier of per_iteration.
  const double batch_slack = 0.05, per_iteration_slack_us = 1500;
  for (const auto& c : cases) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["iterations"], kIters);
    EXPECT_EQ(c["samples_us"].size(), static_cast<size_t>(kIters));
    EXPECT_EQ(c["timing"], "host");
    const auto rank_mean = c["rank_mean_us"].get<std::vector<double>>();
    EXPECT_EQ(rank_mean.size(), 2u);
    if (rank_mean.size() != 2u) continue;
    // The series' mean is the record's time, whatever the method.
    EXPECT_NEAR(c["time_us"]["mean"].get<double>(), mean_of(c["samples_us"]), 1e-6 * kSlow);
    if (c["method"] == "batch") {
      // N back-to-back ops of a rank take at least N periods: elapsed / N >= the period.
      EXPECT_GE(rank_mean[0], kFast) << c.dump();
      EXPECT_GE(rank_mean[1], kSlow) << c.dump();
      at_most(rank_mean[0], kFast * (1 + batch_slack) + late_us, c, "rank 0 mean");
      at_most(rank_mean[1], kSlow * (1 + batch_slack) + late_us, c, "rank 1 mean");
    }
  }
  const auto& avg = by_run(cases, "batch-avg");
  EXPECT_EQ(avg["method"], "batch");
  EXPECT_EQ(avg["rank_aggregation"], "avg");
  const auto am = avg["rank_mean_us"].get<std::vector<double>>();
  EXPECT_NEAR(avg["time_us"]["mean"].get<double>(), (am[0] + am[1]) / 2, 1e-9 * kSlow);  // exact
  EXPECT_GE(avg["time_us"]["mean"].get<double>(), (kFast + kSlow) / 2);

  const auto& mx = by_run(cases, "batch-max");
  EXPECT_EQ(mx["rank_aggregation"], "max");
  const auto xm = mx["rank_mean_us"].get<std::vector<double>>();
  EXPECT_NEAR(mx["time_us"]["mean"].get<double>(), std::max(xm[0], xm[1]), 1e-9 * kSlow);
  EXPECT_GE(mx["time_us"]["mean"].get<double>(), kSlow);

  const auto& mn = by_run(cases, "batch-min");
  EXPECT_EQ(mn["rank_aggregation"], "min");
  const auto nm = mn["rank_mean_us"].get<std::vector<double>>();
  EXPECT_NEAR(mn["time_us"]["mean"].get<double>(), std::min(nm[0], nm[1]), 1e-9 * kSlow);
  at_most(mn["time_us"]["mean"].get<double>(), kFast * (1 + batch_slack) + late_us, mn, "time");

  const auto& r0 = by_run(cases, "batch-rank0");
  EXPECT_EQ(r0["rank_aggregation"], "rank0");
  EXPECT_NEAR(r0["time_us"]["mean"].get<double>(), r0["rank_mean_us"][0].get<double>(), 1e-9 * kSlow);

  // per_iteration: every iteration starts after a barrier and lasts as long as its slowest rank:
  // each sample is at least the slow rank's period, and the fast rank does not pull it down.
  const auto& pi = by_run(cases, "per-iteration");
  EXPECT_EQ(pi["method"], "per_iteration");
  EXPECT_EQ(pi["rank_aggregation"], "slowest_per_iteration");
  for (const auto& s : pi["samples_us"]) EXPECT_GE(s.get<double>(), kSlow) << pi.dump();
  at_most(pi["time_us"]["mean"].get<double>(), kSlow + per_iteration_slack_us + late_per_iteration_us, pi, "time");
  const auto pm = pi["rank_mean_us"].get<std::vector<double>>();
  EXPECT_GE(pm[0], kFast);  // each rank's own op time, barrier excluded
  at_most(pm[0], kFast + per_iteration_slack_us + late_per_iteration_us, pi, "rank 0 mean");
  return late;
}

// Issue 28 §18: the upper bounds are the plugin's sleep plus a small slack, which a machine at a
// load of 7 on 2 cores broke once (8.18 ms against 6.3 ms) although nothing was wrong. They are
// widened by a reference measured just before each job (how late a bare sleep wakes here now),
// and a miss is measured again, up to three times: a build that really adds time misses every
// time, a busy moment does not last three jobs. Lower bounds and arithmetic hold every time.
TEST(TimingMethods, EachMethodReportsTheKnownPerOpTimeAndRankAggregation) {
  std::vector<std::string> late;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    late = run_methods_once();
    if (late.empty() || ::testing::Test::HasFailure()) break;
    std::cout << "attempt " << attempt << " over an upper bound (measured again): " << fmt::format("{}", fmt::join(late, "; "))
              << "\n";
  }
  EXPECT_TRUE(late.empty()) << "over the upper bound in three fresh measurements: " << fmt::format("{}", fmt::join(late, "; "));
}

TEST(TimingMethods, CvTargetReachedOrMissedIsRecordedAndCounted) {
  JobDir dir;
  // steady: every iteration one 20 ms period after a barrier (per_iteration, so that an
  // oversleep is not caught up by a near-zero next sample), CV far below 20 % even on a loaded
  // machine: one round of 10 iterations suffices.
  // spiky: every 2nd op takes 8 periods (CV ~ 0.8): never below 20 %, so it repeats rounds of 10
  // until max_iterations (30) and records the miss.
  const CommandResult r = dir.run(dir.write("cv.toml", sleep_experiment(R"(
[[run]]
name = "steady"
method = "per_iteration"
iterations = 10
max_iterations = 30
target_cv = 0.2
options.sleep = { sleep_us = 20000 }
[[run]]
name = "spiky"
iterations = 10
max_iterations = 30
target_cv = 0.2
options.sleep = { sleep_us = 1000, slow_every = 2, slow_factor = 8 }
[[run]]
name = "spiky-max"
iterations = 10
max_iterations = 30
target_cv = 0.2
rank_aggregation = "max"
options.sleep = { sleep_us = 1000, slow_every = 2, slow_factor = 8 }
[[run]]
name = "no-target"
iterations = 10
options.sleep = { sleep_us = 1000 }
)", "{}")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 4u);
  const auto& steady = by_run(cases, "steady");
  EXPECT_EQ(steady["target_cv"], 0.2);
  EXPECT_EQ(steady["cv_reached"], true) << steady.dump();
  EXPECT_EQ(steady["iterations"], 10);
  EXPECT_LT(steady["time_us"]["cv"].get<double>(), 0.2);
  const auto& spiky = by_run(cases, "spiky");
  EXPECT_EQ(spiky["cv_reached"], false) << spiky.dump();
  EXPECT_EQ(spiky["iterations"], 30);  // three rounds, capped by max_iterations
  EXPECT_EQ(spiky["samples_us"].size(), 30u);
  EXPECT_GE(spiky["time_us"]["cv"].get<double>(), 0.2);
  // max: the slowest rank's own series, fetched once after the last round, all 30 samples of it
  // (its mean is that rank's mean), and its CV is the one the rounds were decided on.
  const auto& spiky_max = by_run(cases, "spiky-max");
  EXPECT_EQ(spiky_max["rank_aggregation"], "max");
  EXPECT_EQ(spiky_max["cv_reached"], false) << spiky_max.dump();
  EXPECT_EQ(spiky_max["iterations"], 30);
  ASSERT_EQ(spiky_max["samples_us"].size(), 30u);
  const auto means = spiky_max["rank_mean_us"].get<std::vector<double>>();
  ASSERT_EQ(means.size(), 2u);
  EXPECT_NEAR(spiky_max["time_us"]["mean"].get<double>(), std::max(means[0], means[1]), 1e-9 * means[0]);
  EXPECT_GE(spiky_max["time_us"]["cv"].get<double>(), 0.2);
  const auto& none = by_run(cases, "no-target");
  EXPECT_FALSE(none.contains("target_cv")) << none.dump();
  EXPECT_FALSE(none.contains("cv_reached"));
  EXPECT_NE(r.output.find("# target_cv: 3 cases with a target, 1 reached it, 2 missed it"), std::string::npos)
      << r.output;
  // results.csv carries the same, the md table marks the miss.
  const std::string csv = read_text(dir.job_folder() / "results.csv");
  EXPECT_NE(csv.find(",0.2,false"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",0.2,true"), std::string::npos) << csv;
  EXPECT_NE(read_text(dir.job_folder() / "summary.md").find("(target missed)"), std::string::npos);
}

// min_time is a minimum of timed time. The first round's size comes from the warm-up's time per
// op, and a cold start makes that an overestimate: here the check and the 3 warm-ups take 10 ms
// each, the timed ops 1 ms, so the warm-up asks for 6 iterations (6 ms, 10x short of 60 ms).
// Rounds follow until the timed time itself reaches min_time. A 30-iteration cap is honoured.
TEST(TimingMethods, MinTimeIsReachedEvenWhenTheWarmUpWasSlow) {
  JobDir dir;
  const CommandResult r = dir.run(dir.write("mt.toml", sleep_experiment(R"(
[[run]]
name = "filled"
iterations = 1
warmup = 3
min_time = "60ms"
[[run]]
name = "capped"
iterations = 1
warmup = 3
min_time = "60ms"
max_iterations = 30
)", "{ sleep_us = 1000, slow_first = 4, slow_factor = 10 }")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
  const auto& filled = by_run(cases, "filled");
  const double timed_ms = filled["iterations"].get<double>() * filled["time_us"]["mean"].get<double>() / 1e3;
  EXPECT_GE(timed_ms, 60.0 * 0.97) << filled.dump();
  // Not far past it either: the later rounds are sized from the timed ops' own time.
  EXPECT_LE(filled["iterations"].get<int>(), 90) << filled.dump();
  EXPECT_EQ(filled["samples_us"].size(), filled["iterations"].get<size_t>());
  const auto& capped = by_run(cases, "capped");
  EXPECT_EQ(capped["iterations"], 30) << capped.dump();
}

// Rounds (min_time here, target_cv below) continue the case's iteration numbers in the trace:
// one series 0..iterations-1 on every rank, not a restart at 0 in each round.
TEST(TimingMethods, TraceNumbersIterationsAcrossRounds) {
  JobDir dir;
  const CommandResult r = dir.run(dir.write("tr.toml", sleep_experiment(R"(
trace = true
[[run]]
name = "min-time"
iterations = 1
warmup = 3
min_time = "30ms"
[[run]]
name = "cv-rounds"
method = "per_iteration"
iterations = 4
target_cv = 0.000001
max_iterations = 12
)", "{ sleep_us = 1000, slow_first = 4, slow_factor = 10 }")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto trace = nlohmann::json::parse(read_text(dir.job_folder() / "trace.json"));
  for (const auto& c : dir.records()) {
    const int iterations = c["iterations"];
    ASSERT_GT(iterations, c["run"] == "min-time" ? 1 : 4) << "one round only: " << c.dump();
    std::map<int, std::vector<int>> numbers;  // pid (one per rank) -> iteration numbers
    for (const auto& ev : trace["traceEvents"])
      if (ev.value("ph", "") == "X" && ev["args"].value("run", "") == c["run"] && ev["args"].contains("iteration"))
        numbers[ev["pid"].get<int>()].push_back(ev["args"]["iteration"].get<int>());
    ASSERT_EQ(numbers.size(), 2u) << c["run"];
    std::vector<int> expected(static_cast<size_t>(iterations));
    std::iota(expected.begin(), expected.end(), 0);
    for (auto& [pid, n] : numbers) {
      std::sort(n.begin(), n.end());
      EXPECT_EQ(n, expected) << c["run"] << " pid " << pid;
    }
  }
}

// A pattern between ranks 1 and 2 of 3: rank 0 times nothing. Its zero warm-up once sized the
// case at max_iterations (100,000 round trips, a minute), and its zero samples stopped the
// rounds; the busiest rank's times decide both now.
TEST(TimingMethods, MinTimeFollowsTheBusiestRankWhenRankZeroIsNotAPeer) {
  JobDir dir;
  const CommandResult r = dir.run(dir.write("peers.toml", R"(name = "peers"
[[run]]
backend = "gloo"
ops = ["pingpong"]
sizes = ["4KiB"]
world_size = 3
peers = [1, 2]
iterations = 1
warmup = 3
min_time = "50ms"
)"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 1u);
  const auto& c = cases[0];
  const double timed_ms = c["iterations"].get<double>() * c["time_us"]["mean"].get<double>() / 1e3;
  EXPECT_GE(timed_ms, 50.0 * 0.97) << c.dump();
  EXPECT_LT(c["iterations"].get<int>(), 100000) << c.dump();
  EXPECT_LT(timed_ms, 50.0 * 20) << c.dump();  // sized from the timed ops, not the cap
}

}  // namespace
}  // namespace commbench::testing
