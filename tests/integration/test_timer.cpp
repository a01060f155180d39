// The worker's timer through the real runner: the clock in use is in every execution's
// metadata, COMMBENCH_TIMER=steady forces the portable clock, and a bad setting fails the run
// with the variable named instead of timing with something else.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "job_harness.h"

namespace commbench::testing {
namespace {

// Sets an environment variable for one test (the workers inherit it), then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

constexpr const char* kPingPong = R"(
name = "timer"
[[run]]
backend = "gloo"
world_size = 2
ops = ["pingpong"]
sizes = [8, 4096]
dtype = "uint8"
warmup = 5
iterations = 50
)";

// Runs the pingpong job; checks that both cases were timed; returns each rank's `timer`.
std::vector<std::string> timers_of_a_good_run() {
  JobDir dir;
  const CommandResult r = dir.run(dir.write("t.toml", kPingPong), {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  EXPECT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_GT(c["time_us"]["p50"].get<double>(), 0.0) << c.dump();
  }
  std::vector<std::string> timers;
  for (const auto& e : dir.records("execution"))
    for (const char* rank : {"0", "1"}) timers.push_back(e["metadata"]["ranks"][rank].value("timer", ""));
  return timers;
}

TEST(Timer, EveryExecutionNamesItsClock) {
  ScopedEnv automatic("COMMBENCH_TIMER", "auto");
  const auto timers = timers_of_a_good_run();
  ASSERT_EQ(timers.size(), 2u);
  for (const std::string& timer : timers)
    EXPECT_TRUE(timer.rfind("tsc (invariant, ", 0) == 0 || timer.rfind("steady_clock (", 0) == 0)
        << timer;
}

TEST(Timer, SteadyCanBeForcedAndTimesTheSameCases) {
  ScopedEnv steady("COMMBENCH_TIMER", "steady");
  const auto timers = timers_of_a_good_run();
  ASSERT_EQ(timers.size(), 2u);
  for (const std::string& timer : timers) EXPECT_EQ(timer, "steady_clock (COMMBENCH_TIMER=steady)");
}

// A wrong setting of the launch: named before any worker starts, exit 2 (until 2026-12-01 the
// workers started and each failed, and the job exited 1 as a failed measurement).
TEST(Timer, AnUnknownSettingFailsTheRunNamingTheVariable) {
  ScopedEnv bad("COMMBENCH_TIMER", "wallclock");
  JobDir dir;
  const CommandResult r = dir.run(dir.write("t.toml", kPingPong), {"--quiet"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("COMMBENCH_TIMER='wallclock' is not one of auto, tsc, steady"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("exit code"), std::string::npos) << "no worker should have started: " << r.output;
}

}  // namespace
}  // namespace commbench::testing
