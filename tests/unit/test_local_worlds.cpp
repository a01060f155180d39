// Issue 28 §3: a local world the host cannot or should not run is refused at validation, before
// anything is spawned: more than kRanksPerCpu ranks per CPU without `oversubscribe = true`, and
// more workers than the process limits (pids.max, RLIMIT_NPROC) let start, either way.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "experiment/experiment.h"
#include "experiment/local_world_check.h"
#include "launch/host_limits.h"

namespace commbench {
namespace {

Experiment local_world_experiment(const std::string& run_keys) {
  const ParseResult r = parse_experiment_string(fmt::format(R"(name = "w"
[[run]]
backend = "gloo"
ops = ["allreduce"]
sizes = ["4KiB"]
{}
)", run_keys), "w.toml");
  EXPECT_TRUE(r.experiment) << (r.diagnostics.empty() ? "" : r.diagnostics[0].format());
  return r.experiment.value_or(Experiment{});
}

TEST(LocalWorlds, MoreRanksThanTheCpusCanTakeNeedOversubscribe) {
  HostLimits two_cpus;
  two_cpus.cpus = 2;
  EXPECT_TRUE(check_local_worlds(local_world_experiment("world_sizes = [2, 16]"), two_cpus).empty());
  const auto d = check_local_worlds(local_world_experiment("world_sizes = [2, 17, 100000]"), two_cpus);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].format().rfind("w.toml:6:", 0), 0u) << "at the value in world_sizes: " << d[0].format();
  EXPECT_NE(d[0].message.find("world size 17"), std::string::npos) << d[0].message;
  EXPECT_NE(d[0].message.find("oversubscribe = true"), std::string::npos) << d[0].message;
  EXPECT_NE(d[1].message.find("world size 100000"), std::string::npos) << d[1].message;
  EXPECT_TRUE(check_local_worlds(local_world_experiment("world_sizes = [17, 64]\noversubscribe = true"), two_cpus).empty());
}

TEST(LocalWorlds, AWorldTheProcessLimitsCannotHoldIsRefusedEvenWithOversubscribe) {
  HostLimits limits;
  limits.cpus = 64;
  limits.tasks_left = 30;
  limits.tasks_limit_source = "/sys/fs/cgroup/pids/job/pids.max";
  EXPECT_TRUE(check_local_worlds(local_world_experiment("world_size = 10"), limits).empty());
  const auto d = check_local_worlds(local_world_experiment("world_size = 11\noversubscribe = true"), limits);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_NE(d[0].message.find("/sys/fs/cgroup/pids/job/pids.max"), std::string::npos) << d[0].message;
  EXPECT_NE(d[0].message.find("lets only 30 more start"), std::string::npos) << d[0].message;
}

TEST(LocalWorlds, TheHostIsReadForItsCpusAndLimits) {
  const HostLimits l = read_host_limits();
  EXPECT_GE(l.cpus, 1);
  if (l.tasks_left) EXPECT_FALSE(l.tasks_limit_source.empty());
}

}  // namespace
}  // namespace commbench
