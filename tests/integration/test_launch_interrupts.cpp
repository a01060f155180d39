// A signal to a task while the tasks of a launch are still meeting (joining, agreeing on the
// experiment): every task ends at once with 130, and those that got no signal say why. These
// waits once lasted the whole rendezvous timeout (2 minutes by default) whatever the user did.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "../unit/test_common.h"
#include "job_harness.h"

namespace commbench::testing {
namespace launch_interrupts_test {  // named: unity builds put test_launchers.cpp's helpers in the same unit

namespace fs = std::filesystem;

using commbench::test::free_port;

const char* kExperiment = R"(
name = "meeting"
[[run]]
name = "r"
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 3
)";

// Starts the given ranks of a torchrun-style launch of `world` tasks, sends SIGINT to `signalled`
// after `delay_s`, and records each task's exit code and the seconds from the signal to the last exit.
// Starts the given ranks of a torchrun-style launch of `world` tasks (rank `bad_output`, if any,
// with an output folder it cannot create), sends SIGINT to `signalled` (-1: none) after
// `delay_s`, and records each task's exit code and the milliseconds from the signal (or the
// start) to the last exit.
void launch_some(const JobDir& dir, const fs::path& file, int world, const std::vector<int>& ranks, int signalled,
                 double delay_s, int bad_output = -1) {
  const int port = free_port();
  const std::string d = dir.path().string();
  std::string script = "t0=$(date +%s%N)\n";
  for (int r : ranks)
    script += fmt::format(
        "RANK={0} WORLD_SIZE={1} LOCAL_RANK={0} LOCAL_WORLD_SIZE={1} MASTER_ADDR=127.0.0.1 MASTER_PORT={2} "
        "{3} run {4} -o {6} --quiet > {5}/task-{0}.log 2>&1 < /dev/null & pid{0}=$!\n",
        r, world, port, COMMBENCH_BIN, file.string(), d, r == bad_output ? "/proc/no-such-folder" : d + "/out");
  if (signalled >= 0) script += fmt::format("sleep {}\nkill -INT $pid{}\nt0=$(date +%s%N)\n", delay_s, signalled);
  for (int r : ranks) script += fmt::format("wait $pid{0}; echo $? > {1}/exit-{0}\n", r, d);
  script += fmt::format("echo $(( ($(date +%s%N) - t0) / 1000000 )) > {}/after-signal-ms\n", d);
  const auto path = dir.write("launch.sh", script);
  ASSERT_EQ(std::system(("bash " + path.string()).c_str()), 0);
}

double seconds_after_signal(const JobDir& dir) {
  return std::stod(read_text(dir.path() / "after-signal-ms")) / 1000.0;
}

int exit_of(const JobDir& dir, int rank) { return std::stoi(read_text(dir.path() / fmt::format("exit-{}", rank))); }
std::string log_of(const JobDir& dir, int rank) { return read_text(dir.path() / fmt::format("task-{}.log", rank)); }

// A long 2-rank job (one case of `sizes` after another, 20 repeats) and the start of a script
// that launches it as two torchrun-style tasks ($pid0, $pid1) and waits until it measures (its
// first case line): what an mpirun-like test then does to the tasks follows.
std::string two_tasks_measuring(const JobDir& dir, const std::string& sizes) {
  const auto file = dir.write("long.toml", fmt::format(R"(
name = "long"
[[run]]
name = "r"
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = {}
iterations = 20000
repeats = 20
)", sizes));
  const int port = free_port();
  const std::string d = dir.path().string();
  std::string script;
  for (int r : {0, 1})
    script += fmt::format(
        "RANK={0} WORLD_SIZE=2 LOCAL_RANK={0} LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT={1} "
        "{2} run {3} -o {4}/out --quiet > {4}/task-{0}.log 2>&1 < /dev/null & pid{0}=$!\n",
        r, port, COMMBENCH_BIN, file.string(), d);
  script += fmt::format("for i in $(seq 300); do grep -qs '\"type\":\"case\"' {}/out/*/results.jsonl && break; "
                        "sleep 0.1; done\n", d);
  return script;
}

// Three tasks launched, two started: rank 0 waits for rank 2 to join, rank 1 for rank 0's host
// map. Ctrl-C on rank 0 ends both; rank 1, which got no signal, learns why from rank 0.
TEST(LaunchInterrupts, ASignalToRankZeroWhileATaskIsMissingEndsEveryStartedTask) {
  JobDir dir;
  const auto file = dir.write("x.toml", kExperiment);
  launch_some(dir, file, 3, {0, 1}, 0, 2.0);
  EXPECT_LT(seconds_after_signal(dir), 10.0) << log_of(dir, 0) << log_of(dir, 1);
  EXPECT_EQ(exit_of(dir, 0), 130) << log_of(dir, 0);
  EXPECT_EQ(exit_of(dir, 1), 130) << log_of(dir, 1);
  EXPECT_NE(log_of(dir, 1).find("rank 0's task was interrupted by signal 2"), std::string::npos) << log_of(dir, 1);
}

// Rank 0 never starts: rank 1 waits to reach its store. Ctrl-C on rank 1 ends it at once.
TEST(LaunchInterrupts, ASignalToATaskWaitingForRankZerosStoreEndsIt) {
  JobDir dir;
  const auto file = dir.write("x.toml", kExperiment);
  launch_some(dir, file, 2, {1}, 1, 1.5);
  EXPECT_LT(seconds_after_signal(dir), 5.0) << log_of(dir, 1);
  EXPECT_EQ(exit_of(dir, 1), 130) << log_of(dir, 1);
  EXPECT_NE(log_of(dir, 1).find("interrupted by signal 2 (SIGINT) while waiting for rank 0's store"), std::string::npos)
      << log_of(dir, 1);
}

// Three tasks launched, two started: Ctrl-C on rank 1, which has joined and waits for rank 0's
// host map, ends rank 0's wait for rank 2 at once (rank 0 once waited out the rendezvous
// timeout, then blamed rank 2).
TEST(LaunchInterrupts, ASignalToAJoinedTaskWhileAnotherIsMissingEndsRankZerosWait) {
  JobDir dir;
  const auto file = dir.write("x.toml", kExperiment);
  launch_some(dir, file, 3, {0, 1}, 1, 2.0);
  EXPECT_LT(seconds_after_signal(dir), 10.0) << log_of(dir, 0);
  EXPECT_EQ(exit_of(dir, 1), 130) << log_of(dir, 1);
  EXPECT_EQ(exit_of(dir, 0), 130) << log_of(dir, 0);
  EXPECT_NE(log_of(dir, 0).find("rank 1's agent left before the job started: interrupted by signal 2"),
            std::string::npos)
      << log_of(dir, 0);
}

// A task that ends on an error of its own (its output folder cannot be created) is named at
// once, and the job fails: it once ended 0, the execution "skipped" for want of that rank.
TEST(LaunchInterrupts, ATaskThatEndsOnAnErrorFailsTheExecutionThatNeedsIt) {
  JobDir dir;
  const auto file = dir.write("x.toml", kExperiment);
  launch_some(dir, file, 2, {0, 1}, -1, 0, 1);
  EXPECT_EQ(exit_of(dir, 1), 2) << log_of(dir, 1);
  EXPECT_EQ(exit_of(dir, 0), 1) << log_of(dir, 0);
  EXPECT_LT(seconds_after_signal(dir), 30.0) << log_of(dir, 0);
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "failed") << execs[0].dump();
  EXPECT_EQ(execs[0]["failed_rank"], 1) << execs[0].dump();
  EXPECT_NE(execs[0]["reason"].get<std::string>().find("rank 1's task ended on an error"), std::string::npos)
      << execs[0].dump();
}

// A probe: Ctrl-C on mpirun sends SIGTERM to every task, and mpirun SIGKILLs the rest as soon as
// one task exits non-zero. Rank 1 exited 130 within 50 ms and rank 0 was killed while writing
// the summary: no summary.json, no job_end. The other tasks now wait for rank 0 to finish writing.
TEST(LaunchInterrupts, UnderALauncherThatKillsTheRestWhenOneTaskEndsRankZeroStillWritesEverything) {
  JobDir dir;
  const std::string d = dir.path().string();
  // Once the job measures, behave as mpirun does.
  std::string script = two_tasks_measuring(dir, R"(["4KiB", "64KiB"])");
  script += "kill -TERM $pid0 $pid1\n";
  script += fmt::format("wait $pid1; echo $? > {0}/exit-1\nkill -KILL $pid0 2>/dev/null\nwait $pid0; echo $? > {0}/exit-0\n", d);
  ASSERT_EQ(std::system(("bash " + dir.write("launch.sh", script).string()).c_str()), 0);
  EXPECT_EQ(exit_of(dir, 1), 130) << log_of(dir, 1);
  // Rank 0's own exit code may still be mpirun's SIGKILL (137): killed after its files, as it exits.
  EXPECT_TRUE(exit_of(dir, 0) == 130 || exit_of(dir, 0) == 137) << log_of(dir, 0);
  const auto job = dir.job_folder();
  EXPECT_TRUE(fs::exists(job / "summary.json")) << log_of(dir, 0);
  const auto ends = dir.records("job_end");
  ASSERT_EQ(ends.size(), 1u) << log_of(dir, 0);
  EXPECT_EQ(ends[0]["exit_code"], 130);
  EXPECT_NE(log_of(dir, 1).find("rank 0's task printed the job's account and wrote its results"), std::string::npos)
      << log_of(dir, 1);
}

// A probe: one task SIGKILLed mid-run, then mpirun's SIGTERM to the rest and its SIGKILL a second
// later. Rank 0 waited 10 s for the dead task's report, deaf to the signal, and was killed before
// it wrote anything: no summary.json, no job_end. The wait now ends on the signal.
TEST(LaunchInterrupts, ASignalEndsRankZerosWaitForADeadTasksReport) {
  JobDir dir;
  const std::string d = dir.path().string();
  std::string script = two_tasks_measuring(dir, R"(["4KiB"])");
  // Rank 1's task dies at once, its workers with it (their agent's death ends them).
  script += "kill -KILL $pid1; wait $pid1\nsleep 0.5\nkill -TERM $pid0\n";
  // A grace of 3 s (mpirun's is 1 s; a loaded CI machine gets more): the wait was 10 s.
  script += fmt::format("for i in $(seq 30); do kill -0 $pid0 2>/dev/null || break; sleep 0.1; done\n"
                        "kill -KILL $pid0 2>/dev/null\nwait $pid0; echo $? > {0}/exit-0\n", d);
  ASSERT_EQ(std::system(("bash " + dir.write("launch.sh", script).string()).c_str()), 0);
  EXPECT_EQ(exit_of(dir, 0), 130) << log_of(dir, 0);
  const auto job = dir.job_folder();
  EXPECT_TRUE(fs::exists(job / "summary.json")) << log_of(dir, 0);
  const auto ends = dir.records("job_end");
  ASSERT_EQ(ends.size(), 1u) << log_of(dir, 0);
  EXPECT_EQ(ends[0]["exit_code"], 130);
  // --quiet: stdout stays empty, but the job's end is said on stderr.
  EXPECT_NE(log_of(dir, 0).find("commbench run: exit 130: "), std::string::npos) << log_of(dir, 0);
}

}  // namespace launch_interrupts_test
}  // namespace commbench::testing
