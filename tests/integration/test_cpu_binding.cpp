// Run setting `cpu_binding` through the real runner: the CPUs each worker reports in its metadata
// (`binding`, read from the worker's own affinity) and the records' `cpu_binding`. The host's
// topology comes from a fake sysfs tree (COMMBENCH_SYSFS_ROOT) naming two CPUs this test may
// run on, so each layout (separate cores, two hardware threads of one core, two NUMA nodes) is
// tried on any machine with two CPUs.
#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "../unit/test_common.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

namespace fs = std::filesystem;
using commbench::test::free_port;

std::vector<int> my_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

void put(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

struct Topology {
  // per CPU: (package, core id); per NUMA node: its CPU list
  std::vector<std::pair<int, std::pair<int, int>>> cores;
  std::vector<std::string> nodes;
};

fs::path fake_tree(const JobDir& dir, const Topology& t) {
  const fs::path root = dir.path() / "fakeroot";
  for (const auto& [cpu, core] : t.cores) {
    const fs::path topo = root / fmt::format("sys/devices/system/cpu/cpu{}/topology", cpu);
    put(topo / "physical_package_id", std::to_string(core.first));
    put(topo / "core_id", std::to_string(core.second));
    std::string siblings;  // the CPUs of the same (package, core), as the kernel lists them
    for (const auto& [other, other_core] : t.cores)
      if (other_core == core) siblings += (siblings.empty() ? "" : ",") + std::to_string(other);
    put(topo / "core_cpus_list", siblings);
  }
  // Every other CPU this process may use is a core of its own after them, so that a job left on
  // all of them (the launcher test) still deals a and b first on a bigger machine.
  for (int cpu : my_cpus()) {
    bool described = false;
    for (const auto& [c, core] : t.cores) described |= c == cpu;
    if (described) continue;
    const fs::path topo = root / fmt::format("sys/devices/system/cpu/cpu{}/topology", cpu);
    put(topo / "physical_package_id", "0");
    put(topo / "core_cpus_list", std::to_string(cpu));
  }
  for (size_t n = 0; n < t.nodes.size(); ++n)
    put(root / fmt::format("sys/devices/system/node/node{}/cpulist", n), t.nodes[n]);
  fs::create_directories(root / "sys/devices/system/node");
  return root;
}

struct Ran {
  int exit_code = 0;
  std::string output;
  std::vector<nlohmann::json> metadata;  // per rank, metadata/rank<N>.json
  std::vector<nlohmann::json> bindings;  // per rank, the first execution's
  std::vector<nlohmann::json> records;
};

// `world` gloo ranks, one small allreduce, with `binding` ("" leaves the key out), under the fake
// tree (when given) and a command prefix (the fixture's `on_a_and_b()`: the job confined to the two
// CPUs the tree describes, whatever else the machine has).
Ran run_bound(const JobDir& dir, int world, const std::string& binding, const fs::path& root,
              const std::string& prefix = "", const std::string& backends = "\"gloo\"") {
  const auto file = dir.write("bind.toml", fmt::format(R"(
name = "bind"
[defaults]
world_size = {}
iterations = 3
warmup = 1
{}
[[run]]
name = "g"
backends = [{}]
ops = ["allreduce"]
sizes = [1024]
)", world, binding.empty() ? "" : fmt::format("cpu_binding = \"{}\"", binding), backends));
  const std::string env = root.empty() ? "" : "COMMBENCH_SYSFS_ROOT=" + shell_quote(root.string());
  const CommandResult r = run_shell(fmt::format("cd {} && env {} {} {} run bind.toml -o out --quiet",
                                                shell_quote(dir.path().string()), env, prefix, commbench_bin()));
  Ran ran{r.exit_code, r.output, {}, {}};
  if (r.exit_code != 0) return ran;
  for (int rank = 0; rank < world; ++rank) {
    const auto meta = nlohmann::json::parse(read_text(dir.job_folder() / fmt::format("metadata/rank{}.json", rank)));
    ran.metadata.push_back(meta);
    ran.bindings.push_back(meta.at("executions").at(0).at("binding"));
  }
  ran.records = dir.records();
  return ran;
}

class CpuBindingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built (dependency missing)";
    const auto cpus = my_cpus();
    if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs in this process's affinity, has " << cpus.size();
    a = cpus[0];
    b = cpus[1];
  }
  std::string on_a_and_b() const { return fmt::format("taskset -c {},{}", a, b); }
  int a = 0, b = 1;
};

TEST_F(CpuBindingTest, CoreGivesEachLocalRankItsOwnCoreAndDealsRoundRobinBeyondThem) {
  JobDir dir;
  const fs::path root = fake_tree(dir, {{{a, {0, 0}}, {b, {0, 1}}}, {fmt::format("{},{}", a, b)}});
  const Ran two = run_bound(dir, 2, "core", root, on_a_and_b());
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_EQ(two.bindings[0]["cpus"], std::to_string(a)) << two.bindings[0];
  EXPECT_EQ(two.bindings[1]["cpus"], std::to_string(b)) << two.bindings[1];
  ASSERT_FALSE(two.records.empty());
  for (const auto& rec : two.records) {
    EXPECT_EQ(rec.value("cpu_binding", ""), "core") << rec.dump();
    EXPECT_EQ(rec.value("status", ""), "ok") << rec.dump();
  }

  JobDir three_dir;
  const fs::path root3 = fake_tree(three_dir, {{{a, {0, 0}}, {b, {0, 1}}}, {}});
  const Ran three = run_bound(three_dir, 3, "core", root3, on_a_and_b());
  ASSERT_EQ(three.exit_code, 0) << three.output;
  EXPECT_EQ(three.bindings[2]["cpus"], std::to_string(a)) << "the third rank shares the first core";
}

TEST_F(CpuBindingTest, CoreKeepsAHyperthreadedCoresThreadsTogether) {
  JobDir dir;
  const fs::path root = fake_tree(dir, {{{a, {0, 7}}, {b, {0, 7}}}, {}});
  const Ran ran = run_bound(dir, 2, "core", root, on_a_and_b());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  const std::string both = b == a + 1 ? fmt::format("{}-{}", a, b) : fmt::format("{},{}", a, b);
  EXPECT_EQ(ran.bindings[0]["cpus"], both) << ran.bindings[0];
  EXPECT_EQ(ran.bindings[1]["cpus"], both) << ran.bindings[1];
}

TEST_F(CpuBindingTest, NumaGivesEachLocalRankANode) {
  JobDir dir;
  const fs::path root = fake_tree(dir, {{{a, {0, 0}}, {b, {1, 0}}}, {std::to_string(a), std::to_string(b)}});
  const Ran ran = run_bound(dir, 2, "numa", root, on_a_and_b());
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.bindings[0]["cpus"], std::to_string(a)) << ran.bindings[0];
  EXPECT_EQ(ran.bindings[0]["numa_nodes"], nlohmann::json::array({0})) << ran.bindings[0];
  EXPECT_EQ(ran.bindings[1]["cpus"], std::to_string(b)) << ran.bindings[1];
  EXPECT_EQ(ran.bindings[1]["numa_nodes"], nlohmann::json::array({1})) << ran.bindings[1];
  for (const auto& rec : ran.records) EXPECT_EQ(rec.value("cpu_binding", ""), "numa") << rec.dump();
}

TEST_F(CpuBindingTest, NoneLeavesTheRanksUnboundAndTheRecordsSayNothing) {
  JobDir dir;
  const Ran ran = run_bound(dir, 2, "", {});
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  for (const auto& bnd : ran.bindings) EXPECT_EQ(bnd["cpu_count"], my_cpus().size()) << bnd;
  for (const auto& rec : ran.records) EXPECT_FALSE(rec.contains("cpu_binding")) << rec.dump();
}

TEST_F(CpuBindingTest, OnlyTheAgentsOwnCpusAreDealt) {
  JobDir dir;
  const fs::path root = fake_tree(dir, {{{a, {0, 0}}, {b, {0, 1}}}, {}});
  const Ran ran = run_bound(dir, 2, "core", root, fmt::format("taskset -c {}", b));
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  EXPECT_EQ(ran.bindings[0]["cpus"], std::to_string(b)) << "CPU " << a << " is outside the agent's cpuset";
  EXPECT_EQ(ran.bindings[1]["cpus"], std::to_string(b));
}

// Every execution of a job is bound from the agent's own CPUs, whatever the spawns before it did
// to the spawning thread: two backends, one execution each.
TEST_F(CpuBindingTest, EveryExecutionOfAJobIsDealtTheSameCpus) {
  if (!plugin_built("ucx")) GTEST_SKIP() << "ucx plugin not built (dependency missing)";
  JobDir dir;
  const fs::path root = fake_tree(dir, {{{a, {0, 0}}, {b, {0, 1}}}, {}});
  const Ran ran = run_bound(dir, 2, "core", root, on_a_and_b(), "\"gloo\", \"ucx\"");
  ASSERT_EQ(ran.exit_code, 0) << ran.output;
  for (int rank = 0; rank < 2; ++rank) {
    const auto& execs = ran.metadata[rank].at("executions");
    ASSERT_EQ(execs.size(), 2u) << execs.dump();
    for (const auto& e : execs) EXPECT_EQ(e["binding"]["cpus"], std::to_string(rank == 0 ? a : b)) << e.dump();
  }
}

// UCX's `progress = auto` counts a bound rank's own core as its alone (CB_HOST_OWN_CPUS) and polls;
// ranks that share cores (more ranks than cores) still yield.
TEST_F(CpuBindingTest, UcxPollsOnItsOwnCoreAndYieldsOnASharedOne) {
  if (!plugin_built("ucx")) GTEST_SKIP() << "ucx plugin not built (dependency missing)";
  // Each rank's `progress` metadata from a `world`-rank job bound to the two cores.
  auto progress_at = [&](int world) {
    JobDir dir;
    const Ran ran = run_bound(dir, world, "core", fake_tree(dir, {{{a, {0, 0}}, {b, {0, 1}}}, {}}), on_a_and_b(),
                              "\"ucx\"");
    EXPECT_EQ(ran.exit_code, 0) << ran.output;
    std::vector<std::string> progress;
    for (const auto& m : ran.metadata) progress.push_back(m["executions"][0]["library_versions"].value("progress", ""));
    return progress;
  };
  const auto own = progress_at(2);
  ASSERT_EQ(own.size(), 2u);
  for (const auto& p : own) EXPECT_EQ(p.rfind("polling (auto: bound to CPUs of its own", 0), 0u) << p;
  const auto shared = progress_at(3);
  ASSERT_EQ(shared.size(), 3u);
  for (const auto& p : shared) EXPECT_EQ(p.rfind("yield", 0), 0u) << p;
}

// Under a launcher (torchrun-style tasks, one agent each): a task the launcher left on every CPU
// is bound by its LOCAL_RANK; a task the launcher already bound keeps that binding, says so, and
// its records do not claim a binding commbench did not make.
TEST_F(CpuBindingTest, UnderALauncherOnlyUnboundTasksAreBound) {
  for (const bool launcher_binds : {false, true}) {
    JobDir dir;
    const fs::path root = fake_tree(dir, {{{a, {0, 0}}, {b, {0, 1}}}, {}});
    dir.write("bind.toml", "name = \"bind\"\n[defaults]\ncpu_binding = \"core\"\nworld_size = 2\niterations = 3\n"
                           "[[run]]\nname = \"g\"\nbackends = [\"gloo\"]\nops = [\"allreduce\"]\nsizes = [1024]\n");
    const fs::path bin = dir.write("commbench.sh", fmt::format("#!/bin/sh\nexec {}{} \"$@\"\n",
                                                               launcher_binds ? fmt::format("taskset -c {} ", b) : "",
                                                               commbench_bin()));
    fs::permissions(bin, fs::perms::owner_all);
    const std::string cmd = fmt::format(
        "cd {} && COMMBENCH_SYSFS_ROOT={} {}/tests/integration/launch_tasks.sh {} {} 2 {} -1 0 -- run bind.toml -o out --quiet",
        shell_quote(dir.path().string()), shell_quote(root.string()), COMMBENCH_SOURCE_DIR, bin.string(),
        dir.path().string(), free_port());
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    for (int r = 0; r < 2; ++r)
      ASSERT_EQ(read_text(dir.path() / fmt::format("exit-{}", r)), "0\n")
          << read_text(dir.path() / fmt::format("task-{}.log", r));
    const std::string log0 = read_text(dir.path() / "task-0.log");
    if (!launcher_binds && log0.find("the launcher bound this rank") != std::string::npos &&
        read_text("/sys/devices/system/cpu/online") != fmt::format("0-{}\n", my_cpus().size() - 1))
      GTEST_SKIP() << "this test runs on fewer CPUs than the host's cpuset, so its tasks look bound by a launcher: "
                   << log0;
    for (int r = 0; r < 2; ++r) {
      const auto meta = nlohmann::json::parse(read_text(dir.job_folder() / fmt::format("metadata/rank{}.json", r)));
      const auto& binding = meta["executions"][0]["binding"];
      EXPECT_EQ(binding["cpus"], std::to_string(launcher_binds || r == 1 ? b : a)) << launcher_binds << binding;
      const std::string log = read_text(dir.path() / fmt::format("task-{}.log", r));
      EXPECT_EQ(log.find("the launcher bound this rank to CPUs") != std::string::npos, launcher_binds) << log;
    }
    for (const auto& rec : dir.records()) {
      if (launcher_binds) EXPECT_FALSE(rec.contains("cpu_binding")) << rec.dump();
      else EXPECT_EQ(rec.value("cpu_binding", ""), "core") << rec.dump();
    }
  }
}

TEST(CpuBinding, AnUnknownModeIsRefusedWithItsPlace) {
  JobDir dir;
  dir.write("bad.toml", "name = \"bad\"\n[defaults]\ncpu_binding = \"cores\"\n[[run]]\nname = \"g\"\nbackends = [\"gloo\"]\n");
  const CommandResult r = run_commbench({"run", "bad.toml", "-o", "out"}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml:3:15: error: unknown CPU binding 'cores'; did you mean 'core'?"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out")) << "refused before anything ran";
}

}  // namespace
}  // namespace commbench::testing
