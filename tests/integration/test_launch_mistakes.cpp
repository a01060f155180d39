// Launches that are wrong before anything runs (a probe's findings): a rank started twice, tasks
// that disagree on the world size, a job token file that cannot be used, a bad
// COMMBENCH_RENDEZVOUS_TIMEOUT. Each is named at once and exits 2, as an experiment that does not
// validate (nothing ran; retrying will not help), where a failed execution exits 1.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "../unit/test_common.h"
#include "job_harness.h"

namespace commbench::testing {
namespace launch_mistakes_test {

namespace fs = std::filesystem;

// Long enough (a few seconds on a loaded machine) for a second copy of a task to arrive while
// the job runs.
const char* kLonger = R"(
name = "mistakes"
[[run]]
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB", "64KiB", "1MiB"]
warmup = 5
iterations = 50
)";

const char* kTwoRanks = R"(
name = "mistakes"
[[run]]
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 3
)";

// torchrun's variables for one task, the rest of the command after them.
std::string task(const JobDir& dir, int rank, int world, int port, const std::string& name, const std::string& args) {
  return fmt::format("RANK={1} WORLD_SIZE={2} LOCAL_RANK={1} LOCAL_WORLD_SIZE={2} MASTER_ADDR=127.0.0.1 "
                     "MASTER_PORT={3} {4} {5} > {0}/{6}.log 2>&1; echo $? > {0}/{6}.rc",
                     dir.path().string(), rank, world, port, COMMBENCH_BIN, args, name);
}

int exit_of(const JobDir& dir, const std::string& name) { return std::stoi(read_text(dir.path() / (name + ".rc"))); }
std::string log_of(const JobDir& dir, const std::string& name) { return read_text(dir.path() / (name + ".log")); }

// A probe: the second copy of rank 1 overwrote the first's keys, nothing was measured, and after
// the whole timeout rank 0 was blamed for not arriving. Now the second to join stops at once
// (exit 2, saying so) and the job goes on with the first.
TEST(LaunchMistakes, ARankStartedTwiceIsRefusedAndTheJobGoesOn) {
  JobDir dir;
  const auto file = dir.write("x.toml", kLonger);
  const int port = commbench::test::free_port();
  const std::string args = fmt::format("run {} -o {}/out --quiet", file.string(), dir.path().string());
  // An explicit token, so that the copy gets in as a real duplicate would (under one launch).
  const std::string cmd = fmt::format(
      "export COMMBENCH_JOB_TOKEN=0123456789abcdef0123 COMMBENCH_RENDEZVOUS_TIMEOUT=30; cd {}; ({}) & ({}) & "
      "({}) & wait",
      dir.path().string(), task(dir, 0, 2, port, "rank0", args), task(dir, 1, 2, port, "rank1", args),
      task(dir, 1, 2, port, "rank1-again", args));
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(exit_of(dir, "rank0"), 0) << log_of(dir, "rank0");
  std::vector<int> ones{exit_of(dir, "rank1"), exit_of(dir, "rank1-again")};
  std::sort(ones.begin(), ones.end());
  EXPECT_EQ(ones, (std::vector<int>{0, 2})) << log_of(dir, "rank1") << "\n---\n" << log_of(dir, "rank1-again");
  const std::string refused = exit_of(dir, "rank1") == 2 ? log_of(dir, "rank1") : log_of(dir, "rank1-again");
  EXPECT_NE(refused.find("rank 1 of this job has already joined"), std::string::npos) << refused;
  EXPECT_NE(refused.find("the job goes on with the first"), std::string::npos) << refused;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "ok") << execs[0].dump();
}

// A probe: without COMMBENCH_JOB_TOKEN (a one-host launch shares its token through a file that
// rank 0 withdraws once every task joined) a copy of rank 1 started mid-job waited for the token
// file for the whole rendezvous timeout and exited 1. It is told at once now (exit 2) and the job
// goes on.
TEST(LaunchMistakes, ARankStartedTwiceMidJobWithoutATokenIsToldAtOnce) {
  JobDir dir;
  std::string longer = kLonger;
  longer.replace(longer.find("iterations = 50"), 15, "iterations = 10000");
  const auto file = dir.write("x.toml", longer);
  const int port = commbench::test::free_port();
  const std::string args = fmt::format("run {} -o {}/out --quiet", file.string(), dir.path().string());
  const std::string cmd = fmt::format(
      "export COMMBENCH_RENDEZVOUS_TIMEOUT=60; cd {0}; ({1}) & ({2}) & "
      "for i in $(seq 300); do grep -qs '\"type\":\"case\"' {0}/out/*/results.jsonl && break; sleep 0.1; done; "
      "t0=$(date +%s); ({3}); echo $(( $(date +%s) - t0 )) > {0}/again-s; wait",
      dir.path().string(), task(dir, 0, 2, port, "rank0", args), task(dir, 1, 2, port, "rank1", args),
      task(dir, 1, 2, port, "rank1-again", args));
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_EQ(exit_of(dir, "rank1-again"), 2) << log_of(dir, "rank1-again");
  EXPECT_LT(std::stoi(read_text(dir.path() / "again-s")), 20) << "the copy waited out the rendezvous timeout";
  EXPECT_NE(log_of(dir, "rank1-again").find("is running but its job token file"), std::string::npos)
      << log_of(dir, "rank1-again");
  EXPECT_EQ(exit_of(dir, "rank0"), 0) << log_of(dir, "rank0");
  EXPECT_EQ(exit_of(dir, "rank1"), 0) << log_of(dir, "rank1");
}

// A probe: RANK=1 WORLD_SIZE=3 joined a 2-task job and both tasks exited 0 as a clean job. Every
// task now compares its count with rank 0's as it joins, in both directions, at once.
TEST(LaunchMistakes, TasksThatCountAnotherWorldSizeAreRefused) {
  struct Task {
    int rank, world;
    int exit;
  };
  const std::vector<std::pair<std::vector<Task>, std::string>> scenarios{
      {{{0, 2, 2}, {1, 3, 2}}, "rank 1 was launched as one of 3 tasks, rank 0 as one of 2"},
      {{{0, 3, 2}, {1, 2, 2}}, "rank 1 was launched as one of 2 tasks, rank 0 as one of 3"},
      // A task beyond rank 0's world: it stops at once; the 2-task job is whole and runs. It is
      // started first, with a token of its own to connect with: started with the others, it could
      // arrive after their job had begun (rank 0 withdraws a one-host job's token file once its
      // world has joined) and wait out its timeout (CI saw it).
      {{{2, 3, 2}, {0, 2, 0}, {1, 2, 0}}, "rank 2 was launched as one of 3 tasks, rank 0 as one of 2"},
  };
  for (const auto& [tasks, says] : scenarios) {
    JobDir dir;
    const auto file = dir.write("x.toml", kTwoRanks);
    const int port = commbench::test::free_port();
    const std::string args = fmt::format("run {} -o {}/out --quiet", file.string(), dir.path().string());
    const bool first_alone = tasks.front().rank != 0;
    std::string cmd = fmt::format("export TMPDIR={} COMMBENCH_RENDEZVOUS_TIMEOUT=60{}; ", dir.path().string(),
                                  first_alone ? " COMMBENCH_JOB_TOKEN=0123456789abcdef0123" : "");
    for (const Task& t : tasks) {
      cmd += "(" + task(dir, t.rank, t.world, port, fmt::format("rank{}", t.rank), args) + ") & ";
      if (first_alone && &t == &tasks.front()) cmd += "sleep 0.5; ";
    }
    cmd += "wait";
    const auto start = std::chrono::steady_clock::now();
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 30.0) << says << ": named at once, not after the 60 s rendezvous timeout";
    for (const Task& t : tasks) {
      const std::string name = fmt::format("rank{}", t.rank);
      EXPECT_EQ(exit_of(dir, name), t.exit) << says << "\n" << log_of(dir, name);
      if (t.exit == 2) EXPECT_NE(log_of(dir, name).find(says), std::string::npos) << log_of(dir, name);
    }
  }
}

// A probe: an unreadable token file (or a directory) read as "is empty".
TEST(LaunchMistakes, AJobTokenFileThatCannotBeUsedSaysWhy) {
  JobDir dir;
  const auto file = dir.write("x.toml", kTwoRanks);
  const fs::path folder = dir.path() / "tokens";
  fs::create_directories(folder);
  ::chmod(folder.c_str(), 0700);
  const fs::path missing = dir.path() / "no-such-token";
  auto run_with = [&](const std::string& token_file, const std::string& as) {
    const std::string cmd = fmt::format("cd {} && COMMBENCH_JOB_TOKEN_FILE={} {} {} run {} -o {}/out --quiet > run.log 2>&1",
                                        dir.path().string(), token_file, as, COMMBENCH_BIN, file.string(),
                                        dir.path().string());
    const int status = std::system(cmd.c_str());
    return std::pair{WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_text(dir.path() / "run.log")};
  };
  auto [rc, out] = run_with(folder.string(), "");
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("it is a directory, not a file"), std::string::npos) << out;
  std::tie(rc, out) = run_with(missing.string(), "");
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("cannot read it: No such file or directory"), std::string::npos) << out;
  if (::geteuid() != 0) GTEST_SKIP() << "the owner cases need root (a file of another user)";
  const fs::path theirs = dir.path() / "theirs";
  {
    std::ofstream(theirs) << "sekrit\n";
  }
  ::chmod(theirs.c_str(), 0600);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  std::tie(rc, out) = run_with(theirs.string(), "");
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("it is owned by uid 65534, not by you (uid 0)"), std::string::npos) << out;
  // Root's own file, read by another user: refused by the kernel, and said so.
  const fs::path mine = dir.path() / "mine";
  {
    std::ofstream(mine) << "sekrit\n";
  }
  ::chmod(mine.c_str(), 0600);
  ::chmod(dir.path().c_str(), 0755);
  const fs::path out_dir = dir.path() / "nobody-out";
  fs::create_directories(out_dir);
  ASSERT_EQ(::chown(out_dir.c_str(), 65534, 65534), 0);
  const std::string cmd = fmt::format(
      "cd {0} && COMMBENCH_JOB_TOKEN_FILE={1} setpriv --reuid=65534 --regid=65534 --clear-groups {2} run {3} -o {4} "
      "--quiet > {0}/nobody.log 2>&1",
      out_dir.string(), mine.string(), COMMBENCH_BIN, file.string(), out_dir.string());
  const int status = std::system(cmd.c_str());
  out = read_text(out_dir / "nobody.log");
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << out;
  EXPECT_NE(out.find("cannot read it: Permission denied"), std::string::npos) << out;
}

// "10abc" was 10 s (atof) and "abc" exited 1; a setting that is wrong is bad input.
TEST(LaunchMistakes, ABadRendezvousTimeoutIsBadInput) {
  JobDir dir;
  const auto file = dir.write("x.toml", kTwoRanks);
  for (const char* value : {"10abc", "abc", "0", "-1", "1e9"}) {
    const std::string cmd = fmt::format("cd {} && COMMBENCH_RENDEZVOUS_TIMEOUT={} {} run {} -o {}/out --quiet > run.log 2>&1",
                                        dir.path().string(), value, COMMBENCH_BIN, file.string(), dir.path().string());
    const int status = std::system(cmd.c_str());
    const std::string out = read_text(dir.path() / "run.log");
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << value << "\n" << out;
    EXPECT_NE(out.find(fmt::format("COMMBENCH_RENDEZVOUS_TIMEOUT={} is not a number of seconds above 0", value)),
              std::string::npos) << out;
  }
}

// A probe: a task whose experiment does not validate on its host (a file not on the shared file
// system) exited 2 at once, while rank 0 waited out the rendezvous (2 minutes) and then blamed it
// as "not arrived", exit 1. It tells rank 0 now, which stops the job at once, naming it (exit 2).
TEST(LaunchMistakes, ATaskRefusingItsExperimentIsNamedByRankZeroAtOnce) {
  JobDir dir;
  const auto file = dir.write("x.toml", kTwoRanks);
  const int port = commbench::test::free_port();
  const std::string cmd = fmt::format(
      "cd {0} && export MASTER_ADDR=127.0.0.1 MASTER_PORT={1} WORLD_SIZE=2 LOCAL_WORLD_SIZE=2; t0=$(date +%s%N); "
      "(RANK=0 LOCAL_RANK=0 {2} run {3} -o {0}/out --quiet > {0}/r0.log 2>&1; echo $? > {0}/e0) & "
      "(RANK=1 LOCAL_RANK=1 {2} run {0}/missing.toml -o {0}/out --quiet > {0}/r1.log 2>&1; echo $? > {0}/e1) & wait; "
      "echo $(( ($(date +%s%N) - t0) / 1000000 )) > {0}/ms",
      dir.path().string(), port, COMMBENCH_BIN, file.string());
  ASSERT_EQ(std::system(("bash -c '" + cmd + "'").c_str()), 0);
  const std::string r0 = read_text(dir.path() / "r0.log"), r1 = read_text(dir.path() / "r1.log");
  EXPECT_EQ(std::stoi(read_text(dir.path() / "e0")), 2) << r0;
  EXPECT_EQ(std::stoi(read_text(dir.path() / "e1")), 2) << r1;
  EXPECT_NE(r0.find("rank 1 of 2 refused the experiment " + (dir.path() / "missing.toml").string()), std::string::npos)
      << r0;
  EXPECT_NE(r1.find("did not validate on this task; rank 0 was told and stops the job"), std::string::npos) << r1;
  EXPECT_LT(std::stoi(read_text(dir.path() / "ms")), 30000) << "rank 0 waited out the rendezvous";
}

// A sysfs root that is not there once gave empty host metadata and telemetry without a word.
TEST(LaunchMistakes, ASysfsRootThatIsNotAFolderIsBadInput) {
  JobDir dir;
  const auto file = dir.write("x.toml", kTwoRanks);
  const std::string cmd = fmt::format("cd {0} && COMMBENCH_SYSFS_ROOT={0}/missing {1} run {2} -o {0}/out --quiet > run.log 2>&1",
                                      dir.path().string(), COMMBENCH_BIN, file.string());
  const int status = std::system(cmd.c_str());
  const std::string out = read_text(dir.path() / "run.log");
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << out;
  EXPECT_NE(out.find("COMMBENCH_SYSFS_ROOT=" + (dir.path() / "missing").string() + " is not a folder"),
            std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out")) << "refused before any folder was made";
}

// A probe: rank 0's store on a MASTER_ADDR that does not resolve, or that is not an address of
// its host, was blamed on the port ("is another job ... using that port?") and exited 1 as if a
// retry might cure it. The advice fits the cause now, and a wrong address is bad input (exit 2).
TEST(LaunchMistakes, AMasterAddressThatIsNotRankZerosIsNamedNotThePort) {
  JobDir dir;
  const auto file = dir.write("x.toml", kTwoRanks);
  for (const auto& [addr, says] : std::vector<std::pair<std::string, std::string>>{
           {"nosuchhost.invalid", "nosuchhost.invalid does not resolve on rank 0's host"},
           {"192.0.2.77", "192.0.2.77 is not an address of rank 0's host"}}) {
    // One task on each of two "hosts": the store listens on MASTER_ADDR (needs a token).
    const std::string cmd = fmt::format(
        "cd {0} && RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR={1} MASTER_PORT={2} "
        "COMMBENCH_JOB_TOKEN=probe-token COMMBENCH_RENDEZVOUS_TIMEOUT=5 {3} run {4} -o {0}/out --quiet > run.log 2>&1",
        dir.path().string(), addr, commbench::test::free_port(), COMMBENCH_BIN, file.string());
    const int status = std::system(cmd.c_str());
    const std::string out = read_text(dir.path() / "run.log");
    EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << addr << "\n" << out;
    EXPECT_NE(out.find(says), std::string::npos) << out;
    EXPECT_EQ(out.find("using that port"), std::string::npos) << out;
  }
}

// COMMBENCH_TIMER=bogus started the workers, which failed one by one, and the job exited 1 as a
// failed measurement: a wrong setting of the launch is named before any worker starts, exit 2.
TEST(LaunchMistakes, ABadTimerSettingIsBadInput) {
  JobDir dir;
  const auto file = dir.write("x.toml", kTwoRanks);
  const std::string cmd = fmt::format("cd {} && COMMBENCH_TIMER=bogus {} run {} -o {}/out --quiet > run.log 2>&1",
                                      dir.path().string(), COMMBENCH_BIN, file.string(), dir.path().string());
  const int status = std::system(cmd.c_str());
  const std::string out = read_text(dir.path() / "run.log");
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 2) << out;
  EXPECT_NE(out.find("COMMBENCH_TIMER='bogus' is not one of auto, tsc, steady"), std::string::npos) << out;
  EXPECT_EQ(out.find("rank 0 exit code"), std::string::npos) << "no worker should have started: " << out;
}

// `sbatch -n 2 --wrap "commbench run x.toml"` on a one-node cluster the test starts
// (slurm_cluster.sh): the batch script is not a task of srun; it once waited 2 minutes for a rank
// 1 nobody started. It now runs the job's ranks itself and says how to span the allocation.
TEST(LaunchMistakes, ASlurmBatchScriptWithoutSrunRunsTheLocalRanks) {
  JobDir dir;
  const auto file = dir.write("x.toml", kTwoRanks);
  const std::string cmd = fmt::format(
      "cd {0} && {1}/tests/integration/slurm_cluster.sh sbatch -n 2 --oversubscribe --wait -o {0}/batch.txt "
      "--wrap '{2} run {3} -o {0}/out --quiet' > {0}/slurm.txt 2>&1",
      dir.path().string(), COMMBENCH_SOURCE_DIR, COMMBENCH_BIN, file.string());
  const int status = std::system(cmd.c_str());
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (rc == 77) GTEST_SKIP() << read_text(dir.path() / "slurm.txt");
  const std::string batch = fs::exists(dir.path() / "batch.txt") ? read_text(dir.path() / "batch.txt") : "";
  ASSERT_EQ(rc, 0) << read_text(dir.path() / "slurm.txt") << "\n" << batch;
  EXPECT_NE(batch.find("started in a Slurm batch script"), std::string::npos) << batch;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "ok") << execs[0].dump();
  EXPECT_NE(read_text(dir.job_folder() / "summary.json").find("\"launcher\": \"local\""), std::string::npos);
}

}  // namespace launch_mistakes_test
}  // namespace commbench::testing
