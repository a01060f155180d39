// commbench under real launch styles: torchrun-style variables (4 tasks started by a script),
// Open MPI's mpirun (when installed), a task killed with SIGKILL mid-run, and refusals of
// incomplete launcher environments. Each job must look like a local run of the same experiment.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "../unit/test_common.h"
#include "job_harness.h"
#include "process_watch.h"

namespace commbench::testing {
namespace {

namespace fs = std::filesystem;

using commbench::test::free_port;

const char* kExperiment = R"(
name = "launched"
[[run]]
name = "collectives"
backends = ["gloo", "ucx"]
world_sizes = [2, 4]
ops = ["allreduce", "allgather", "pingpong"]
sizes = ["4KiB", "64KiB"]
warmup = 1
iterations = 3
timeout = "60s"
)";

// (run, backend, world, op, bytes) of every ok case with #wrong 0.
std::multiset<std::tuple<std::string, std::string, int, std::string, uint64_t>> shape(const std::vector<nlohmann::json>& cases) {
  std::multiset<std::tuple<std::string, std::string, int, std::string, uint64_t>> s;
  for (const auto& c : cases) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
    s.insert({c["run"].get<std::string>(), c["backend"].get<std::string>(), c["world_size"].get<int>(),
              c["op"].get<std::string>(), c["bytes"].get<uint64_t>()});
  }
  return s;
}

std::string launch(const JobDir& dir, const fs::path& file, int n, int kill_rank, double kill_after,
                   const char* signal = "KILL") {
  const std::string cmd = fmt::format("KILL_SIGNAL={} {}/tests/integration/launch_tasks.sh {} {} {} {} {} {} -- run {} -o {} --quiet",
                                      signal, COMMBENCH_SOURCE_DIR, COMMBENCH_BIN, dir.path().string(), n, free_port(),
                                      kill_rank, kill_after, file.string(), (dir.path() / "out").string());
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return cmd;
}

int exit_of(const JobDir& dir, int rank) { return std::stoi(read_text(dir.path() / fmt::format("exit-{}", rank))); }

TEST(Launchers, TorchrunStyleTasksGiveTheSameResultsAsALocalRun) {
  JobDir local, launched;
  const CommandResult r = local.run(local.write("x.toml", kExperiment), {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  launch(launched, launched.write("x.toml", kExperiment), 4, -1, 0);
  for (int k = 0; k < 4; ++k) EXPECT_EQ(exit_of(launched, k), 0) << read_text(launched.path() / fmt::format("task-{}.log", k));
  EXPECT_EQ(shape(launched.records()), shape(local.records()));
  // One job folder (rank 0 writes it; the others add their worker logs to it).
  const fs::path job = launched.job_folder();
  EXPECT_TRUE(fs::exists(job / "summary.md"));
  EXPECT_TRUE(fs::exists(job / "logs/exec1-gloo-w4-rank3.log"));
  const auto execs = launched.records("execution");
  ASSERT_EQ(execs.size(), 4u);
  for (const auto& e : execs) EXPECT_EQ(e["status"], "ok") << e.dump();
  const std::string summary = read_text(job / "summary.json");
  EXPECT_NE(summary.find("\"launcher\": \"torchrun\""), std::string::npos);
}

TEST(Launchers, OpenMpiMpirunFindsRankZeroThroughTheRendezvousFile) {
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not installed (Debian openmpi-bin)";
  JobDir dir;
  const auto file = dir.write("x.toml", kExperiment);
  const std::string cmd = fmt::format("cd {} && mpirun --allow-run-as-root --oversubscribe -np 4 {} run {} -o {} --quiet 2>&1",
                                      dir.path().string(), COMMBENCH_BIN, file.string(), (dir.path() / "out").string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  JobDir local;
  ASSERT_EQ(local.run(local.write("x.toml", kExperiment), {"--quiet"}).exit_code, 0);
  EXPECT_EQ(shape(dir.records()), shape(local.records()));
  EXPECT_NE(read_text(dir.job_folder() / "summary.json").find("\"launcher\": \"openmpi\""), std::string::npos);
  // The rendezvous file is gone with the job.
  for (const auto& e : fs::directory_iterator(dir.path() / "out"))
    EXPECT_EQ(e.path().filename().string().rfind(".rendezvous", 0), std::string::npos) << e.path();
}

TEST(Launchers, AKilledTaskFailsItsRunNamesItsRankAndTheJobGoesOn) {
  JobDir dir;
  const auto file = dir.write("kill.toml", R"(
name = "kill"
[[run]]
name = "first"
backend = "gloo"
world_size = 4
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 5
[[run]]
name = "long"
backend = "gloo"
world_size = 4
ops = ["allreduce"]
sizes = ["4MiB"]
warmup = 1
iterations = 2000
timeout = "20s"
[[run]]
name = "small-world"
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 3
[[run]]
name = "full-world"
backend = "gloo"
world_size = 4
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 3
)");
  launch(dir, file, 4, 2, 4.0);
  // Everyone else stops: within the run's timeout (20 s) + 2 s of the kill at the latest.
  EXPECT_LT(std::stod(read_text(dir.path() / "after-kill")), 22.0);
  for (int k : {0, 1, 3}) EXPECT_EQ(exit_of(dir, k), 1) << read_text(dir.path() / fmt::format("task-{}.log", k));
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 4u);
  EXPECT_EQ(execs[0]["status"], "ok") << execs[0].dump();
  EXPECT_EQ(execs[1]["status"], "failed");
  EXPECT_EQ(execs[1]["failed_rank"], 2) << execs[1].dump();
  EXPECT_EQ(execs[2]["status"], "ok") << "ranks 0 and 1 can still run a 2-rank world: " << execs[2].dump();
  EXPECT_EQ(execs[3]["status"], "skipped");
  EXPECT_NE(execs[3]["reason"].get<std::string>().find("needs rank 2"), std::string::npos) << execs[3].dump();
  // What was measured before the kill is on disk.
  size_t measured = 0;
  for (const auto& c : dir.records()) measured += c["run"] == "first" && c["status"] == "ok";
  EXPECT_EQ(measured, 1u);
}

// Ctrl-C on one task of a launch (rank 2 of 3): that task ends with 130 and says so; agent 0
// names it and ends the job, and the bystander (rank 1) ends with it, 130 too. Agent 0 once waited 11 minutes for it at the next run (ignoring its own
// SIGTERM meanwhile) and recorded its own "remote" failure, blaming rank 0.
TEST(Launchers, AnInterruptedTaskIsNamedAndTheJobEndsAtOnce) {
  JobDir dir;
  const auto file = dir.write("intr.toml", R"(
name = "intr"
[[run]]
name = "first"
backend = "gloo"
world_size = 3
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 5
[[run]]
name = "long"
backend = "gloo"
world_size = 3
ops = ["allreduce"]
sizes = ["4MiB"]
warmup = 1
iterations = 3000
timeout = "60s"
[[run]]
name = "after"
backend = "gloo"
world_size = 3
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 3
)");
  launch(dir, file, 3, 2, 4.0, "INT");
  EXPECT_LT(std::stod(read_text(dir.path() / "after-kill")), 10.0);
  for (int k : {0, 1, 2}) EXPECT_EQ(exit_of(dir, k), 130) << read_text(dir.path() / fmt::format("task-{}.log", k));
  // One execution interrupted by rank 1's signal (normally "long"; on a loaded machine the signal
  // may come earlier), then every later one listed as not started, with 0 cases: nothing left out.
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 3u);
  size_t hit = execs.size();
  for (size_t i = 0; i < execs.size(); ++i)
    if (execs[i]["status"] == "interrupted" && execs[i]["reason"].get<std::string>().find("signal 2") != std::string::npos) {
      hit = i;
      break;
    }
  ASSERT_LT(hit, execs.size()) << "no execution names the signal";
  EXPECT_EQ(execs[hit]["failed_rank"], 2) << execs[hit].dump();
  for (size_t i = 0; i < hit; ++i) EXPECT_EQ(execs[i]["status"], "ok") << execs[i].dump();
  ASSERT_LT(hit, 2u) << "the last run was reached: the signal came too late to test anything";
  for (size_t i = hit + 1; i < execs.size(); ++i) {
    EXPECT_EQ(execs[i]["status"], "interrupted") << execs[i].dump();
    EXPECT_EQ(execs[i]["cases_done"], 0);
    EXPECT_EQ(execs[i]["reason"], "not started: the job was interrupted before it");
  }
}

// A task that read another experiment: rank 0 names it at once (it once waited out the
// 11-minute timeout and then blamed its own store). A wrong launch: both tasks exit 2, and the
// job folder rank 0 had made for a job that never started is not left behind (a probe found it
// empty, exit 1).
TEST(Launchers, ATaskWithAnotherExperimentIsNamedByRankZeroAtOnce) {
  JobDir dir;
  const auto mine = dir.write("a.toml", kExperiment);
  std::string other = kExperiment;
  other.replace(other.find("iterations = 3"), 14, "iterations = 4");
  const auto theirs = dir.write("b.toml", other);
  const std::string cmd = fmt::format(
      "bash -c 'for r in 0 1; do f={}; [ $r = 1 ] && f={}; RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 "
      "MASTER_ADDR=127.0.0.1 MASTER_PORT={} {} run $f -o {} --quiet > {}/task-$r.log 2>&1 & eval pid$r=$!; done; "
      "wait $pid0; echo $? > {}/exit-0; wait $pid1; echo $? > {}/exit-1'",
      mine.string(), theirs.string(), free_port(), COMMBENCH_BIN, (dir.path() / "out").string(), dir.path().string(),
      dir.path().string(), dir.path().string());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  const std::string log = read_text(dir.path() / "task-0.log");
  EXPECT_NE(log.find("rank 1 read a different experiment than rank 0"), std::string::npos) << log;
  EXPECT_EQ(read_text(dir.path() / "exit-0"), "2\n") << log;
  EXPECT_EQ(read_text(dir.path() / "exit-1"), "2\n") << read_text(dir.path() / "task-1.log");
  std::error_code ec;
  EXPECT_TRUE(!std::filesystem::exists(dir.path() / "out") || std::filesystem::is_empty(dir.path() / "out", ec))
      << "a job folder was left for a job that never started";
}

TEST(Launchers, ARankThatNeverArrivesIsNamedAndNobodyHangs) {
  JobDir dir;
  const auto file = dir.write("x.toml", kExperiment);
  // WORLD_SIZE=4 but only ranks 0-2 start.
  const std::string cmd = fmt::format(
      "bash -c 'for r in 0 1 2; do RANK=$r WORLD_SIZE=4 LOCAL_RANK=$r LOCAL_WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 "
      "MASTER_PORT={} COMMBENCH_RENDEZVOUS_TIMEOUT=3 {} run {} -o {} --quiet > {}/task-$r.log 2>&1 & done; "
      "fail=0; for j in 1 2 3; do wait -n || fail=$((fail+1)); done; echo $fail > {}/failed'",
      free_port(), COMMBENCH_BIN, file.string(), (dir.path() / "out").string(), dir.path().string(), dir.path().string());
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
  EXPECT_EQ(read_text(dir.path() / "failed"), "3\n") << "every started task gives up";
  const std::string log = read_text(dir.path() / "task-0.log");
  EXPECT_NE(log.find("not every task of the launch reached the rendezvous"), std::string::npos) << log;
  EXPECT_NE(log.find("3"), std::string::npos) << log;
}

TEST(Launchers, PrintEnvSaysWhatWasDetected) {
  const CommandResult r = run_commbench({"run", "--print-env"}, fs::temp_directory_path());
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("launcher      local"), std::string::npos) << r.output;
  const std::string cmd = fmt::format("OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1 "
                                      "OMPI_COMM_WORLD_LOCAL_SIZE=2 {} run --print-env > {}/env.txt",
                                      COMMBENCH_BIN, fs::temp_directory_path().string());
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string text = read_text(fs::temp_directory_path() / "env.txt");
  EXPECT_NE(text.find("launcher      openmpi"), std::string::npos) << text;
  EXPECT_NE(text.find("rank          1 of 2"), std::string::npos) << text;
  EXPECT_NE(text.find("shared file written by rank 0"), std::string::npos) << text;
}

TEST(Launchers, IncompleteOrMultiHostWithoutTokenIsRefusedUpFront) {
  JobDir dir;
  const auto file = dir.write("x.toml", kExperiment);
  const std::string out = (dir.path() / "o.txt").string();
  // RANK/WORLD_SIZE without MASTER_ADDR: exit 2 before anything runs.
  int rc = std::system(fmt::format("RANK=0 WORLD_SIZE=2 {} run {} > {} 2>&1", COMMBENCH_BIN, file.string(), out).c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  EXPECT_NE(read_text(out).find("MASTER_ADDR is not"), std::string::npos) << read_text(out);
  // Two hosts' worth of ranks (LOCAL_WORLD_SIZE < WORLD_SIZE) and no job token.
  rc = std::system(fmt::format("RANK=0 WORLD_SIZE=2 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 "
                               "MASTER_PORT={} {} run {} -o {} > {} 2>&1",
                               free_port(), COMMBENCH_BIN, file.string(), (dir.path() / "out").string(), out).c_str());
  EXPECT_NE(WEXITSTATUS(rc), 0);
  EXPECT_NE(read_text(out).find("needs a job token"), std::string::npos) << read_text(out);
}

// Two gloo runs: one that ends at once, one that runs until something stops it.
const char* kQuickThenLong = R"(
name = "interrupted"
[[run]]
name = "quick"
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 3
[[run]]
name = "long"
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4MiB"]
iterations = 100000
)";

// SIGINT, SIGTERM and SIGHUP (a closed terminal, a dropped ssh session) of a job: workers
// stopped, files complete, exit code 130 ("interrupted").
TEST(Interrupts, SigintSigtermAndSighupStopTheJobAndKeepEverythingMeasured) {
  for (const char* sig : {"INT", "TERM", "HUP"}) {
    JobDir dir;
    const auto file = dir.write("long.toml", kQuickThenLong);
    const std::string cmd = fmt::format(
        "{} run {} -o {} --quiet > {}/out.txt 2>&1 & pid=$!; sleep 3; kill -{} $pid; wait $pid; echo $? > {}/rc",
        COMMBENCH_BIN, file.string(), (dir.path() / "out").string(), dir.path().string(), sig, dir.path().string());
    ASSERT_EQ(std::system(("bash -c '" + cmd + "'").c_str()), 0);
    EXPECT_EQ(std::stoi(read_text(dir.path() / "rc")), 130) << sig << ": " << read_text(dir.path() / "out.txt");
    const auto execs = dir.records("execution");
    ASSERT_EQ(execs.size(), 2u) << sig;
    EXPECT_EQ(execs[0]["status"], "ok");
    EXPECT_EQ(execs[1]["status"], "interrupted") << execs[1].dump();
    EXPECT_EQ(dir.records().size(), 1u) << "the quick run's case is on disk";
    EXPECT_TRUE(std::filesystem::exists(dir.job_folder() / "summary.json")) << "files closed properly";
    EXPECT_EQ(dir.records("job_end").size(), 1u) << sig << ": the job's end is recorded";
    EXPECT_NE(execs[1]["reason"].get<std::string>().find(std::string("SIG") + sig), std::string::npos) << execs[1].dump();
    // No worker outlives the job: none has its log (stdout) in this job's folder.
    EXPECT_TRUE(workers_logging_under(dir.path()).empty()) << sig;
  }
}

// Issue 28 §3: SIGTERM while a large local world is still being started stops the launch at
// once (the spawning included), and only the ranks that ran get metadata.
TEST(Interrupts, ASignalStopsALaunchWhileItIsStartingWorkers) {
  JobDir dir;
  const auto file = dir.write("many.toml", fmt::format(R"(
name = "many-ranks"
plugin_path = ["{}"]
[[run]]
backend = "sleep"
world_size = 300
oversubscribe = true
ops = ["allreduce"]
sizes = ["64B"]
check = false
)", COMMBENCH_TEST_PLUGIN_DIR));
  BackgroundCommbench job({"run", file.string(), "-o", (dir.path() / "out").string(), "--quiet"}, dir.path(),
                          dir.path() / "run.txt");
  auto worker_logs = [&] {
    size_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::recursive_directory_iterator(dir.path() / "out", ec))
      n += e.path().filename().string().rfind("exec0-", 0) == 0;
    return n;
  };
  for (int i = 0; i < 5000 && worker_logs() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_GT(worker_logs(), 0u) << read_text(dir.path() / "run.txt");
  ::kill(job.pid(), SIGTERM);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(job.wait(60), 130) << read_text(dir.path() / "run.txt");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  const size_t started = worker_logs();
  EXPECT_LT(started, 300u) << "every worker was started after the signal";
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "interrupted") << execs[0].dump();
  EXPECT_NE(execs[0]["reason"].get<std::string>().find("while starting workers"), std::string::npos) << execs[0].dump();
  size_t metadata = 0;
  for (const auto& e : fs::directory_iterator(dir.job_folder() / "metadata")) metadata += e.path().extension() == ".json";
  EXPECT_EQ(metadata, started) << "metadata for ranks that never ran";
  EXPECT_TRUE(workers_logging_under(dir.path()).empty());
}

// Issue 28 §6: agent 0 (the store's host) killed with SIGKILL under a torchrun-style launch.
// The other agent ends with a message saying so and exit code 1, not on an uncaught exception.
TEST(Launchers, WhenRankZerosAgentDiesTheOthersEndCleanly) {
  for (const double kill_after : {2.0, 4.0}) {
    JobDir dir;
    const auto file = dir.write("k0.toml", kQuickThenLong);
    launch(dir, file, 2, 0, kill_after);
    const std::string log = read_text(dir.path() / "task-1.log");
    EXPECT_EQ(exit_of(dir, 1), 1) << "killed after " << kill_after << " s: " << log;
    EXPECT_NE(log.find("lost the job's store"), std::string::npos) << log;
    EXPECT_EQ(log.find("terminate called"), std::string::npos) << log;
    EXPECT_LT(std::stod(read_text(dir.path() / "after-kill")), 30.0);
  }
}

// One short run of Gloo and UCX over the given world sizes, ops and sizes (TOML array contents).
std::string gloo_and_ucx_run(const std::string& name, const std::string& worlds, const std::string& ops,
                             const std::string& sizes) {
  return fmt::format("\n[[run]]\nname = \"{}\"\nbackends = [\"gloo\", \"ucx\"]\nworld_sizes = [{}]\nops = [{}]\n"
                     "sizes = [{}]\nwarmup = 1\niterations = 3\ntimeout = \"60s\"\n",
                     name, worlds, ops, sizes);
}

// Runs experiment `name` with runs `body` on three "hosts" (tests/integration/multihost_netns.sh,
// `env` before it: e.g. CB_RANK_ORDER=cyclic), Gloo on the namespaces' interface and UCX over TCP,
// and the same body locally in `local`. Returns the script's exit code (77: skipped), with its
// output and two tasks' logs in `why`.
int run_on_three_hosts(JobDir& dir, JobDir& local, const std::string& name, const std::string& body,
                       const std::string& env, std::string& why) {
  const auto file = dir.write(name + ".toml", fmt::format("name = \"{}\"\n", name) + body + R"(env = { UCX_NET_DEVICES = "cb0" }
[run.options.gloo]
iface = "cb0"
[run.options.ucx]
transports = "tcp"
)");
  const std::string cmd = fmt::format("{} {}/tests/integration/multihost_netns.sh {} {} {} {} > {}/netns.txt 2>&1", env,
                                      COMMBENCH_SOURCE_DIR, COMMBENCH_BIN, file.string(),
                                      (dir.path() / "out").string(), (dir.path() / "logs").string(),
                                      dir.path().string());
  const int rc = WEXITSTATUS(std::system(cmd.c_str()));
  why = read_text(dir.path() / "netns.txt");
  if (rc != 0 && rc != 77) why += read_text(dir.path() / "logs/task-0.log") + read_text(dir.path() / "logs/task-3.log");
  if (rc == 0 && local.run(local.write("local.toml", fmt::format("name = \"{}\"\n", name) + body), {"--quiet"}).exit_code != 0)
    return -1;
  return rc;
}

// Three "hosts" (network namespaces joined by a bridge), two tasks each, Gloo and UCX over TCP
// between them, the store on host 0's address with a job token (tests/integration/
// multihost_netns.sh). Skipped where namespaces cannot be made (not root).
TEST(Launchers, ThreeHostsOverNetworkNamespacesMatchALocalRun) {
  const std::string body = gloo_and_ucx_run("tcp", "2, 6", R"("allreduce", "allgather", "pingpong")", R"("4KiB", "256KiB")");
  JobDir dir, local;
  std::string why;
  const int rc = run_on_three_hosts(dir, local, "multihost", body, "", why);
  if (rc == 77) GTEST_SKIP() << why;
  ASSERT_EQ(rc, 0) << why;
  EXPECT_EQ(shape(dir.records()), shape(local.records()));
  // Rank 0 really used the namespace's interface and UCX's TCP transport.
  bool gloo_iface = false, ucx_tcp = false;
  for (const auto& e : dir.records("execution")) {
    EXPECT_EQ(e["status"], "ok") << e.dump();
    const auto& b = e["metadata"]["ranks"]["0"]["backend"];
    gloo_iface |= b.value("iface", "") == "cb0";
    ucx_tcp |= b.value("transports", "") == "tcp";
  }
  EXPECT_TRUE(gloo_iface);
  EXPECT_TRUE(ucx_tcp);
  EXPECT_TRUE(std::filesystem::exists(dir.job_folder() / "logs/exec1-gloo-w6-rank5.log"));
  // Hosts have names of their own: 6 ranks gather through a tree of 3 hosts, 2 ranks (both on
  // host 0) through the job's store.
  for (const auto& e : dir.records("execution")) {
    const auto& m = e["metadata"]["ranks"]["0"];
    const int world = e["world_size"].get<int>();
    EXPECT_EQ(m["bootstrap"]["hosts"], world == 6 ? 3 : 1) << e.dump();
    EXPECT_EQ(m["bootstrap"]["allgather"], world == 6 ? "host tree" : "job store") << e.dump();
    EXPECT_EQ(m["bootstrap"]["broadcast_barrier"], world == 6 ? "host leaders" : "job store") << e.dump();
    EXPECT_EQ(m["bootstrap"]["gather"], world == 6 ? "host leaders" : "job store") << e.dump();
  }
}

// Ranks dealt round-robin over three hosts (srun --distribution=cyclic): a host holds ranks 0 and
// 3, so allgathers through the host tree must put blocks back in rank order; smaller worlds span
// fewer hosts (2 ranks: hosts 0 and 1).
TEST(Launchers, RanksDealtRoundRobinOverThreeHostsGatherThroughTheHostTree) {
  const std::string body = gloo_and_ucx_run("cyclic", "2, 4, 6", R"("allreduce", "allgather")", R"("4KiB", "1MiB")");
  JobDir dir, local;
  std::string why;
  const int rc = run_on_three_hosts(dir, local, "cyclic", body, "CB_RANK_ORDER=cyclic", why);
  if (rc == 77) GTEST_SKIP() << why;
  ASSERT_EQ(rc, 0) << why;
  EXPECT_EQ(shape(dir.records()), shape(local.records()));
  size_t checked = 0;
  for (const auto& c : dir.records()) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    checked += c["status"] == "ok";
  }
  EXPECT_EQ(checked, 2u * 3u * 2u * 2u);  // backends × worlds × ops × sizes, every result checked
  for (const auto& e : dir.records("execution")) EXPECT_EQ(e["status"], "ok") << e.dump();
  // Every rank's metadata file says how its allgathers went: hosts numbered by their lowest rank.
  // (Under a launcher an agent's only worker is its worker 0: its metadata was once filed as rank
  // 0's, so the files of ranks 1-5 had none.)
  const std::map<int, int> hosts_of_world{{2, 2}, {4, 3}, {6, 3}};
  for (int r = 0; r < 6; ++r) {
    const auto meta = nlohmann::json::parse(read_text(dir.job_folder() / fmt::format("metadata/rank{}.json", r)));
    size_t seen = 0;
    for (const auto& e : meta["executions"]) {
      const int world = e["world_size"].get<int>();
      ASSERT_TRUE(e.contains("bootstrap") && e.contains("binding")) << "rank " << r << ": " << e.dump();
      EXPECT_EQ(e["bootstrap"]["hosts"], hosts_of_world.at(world)) << "rank " << r << ": " << e.dump();
      EXPECT_EQ(e["bootstrap"]["host_index"], r % 3) << "rank " << r << ": " << e.dump();
      EXPECT_EQ(e["bootstrap"]["allgather"], "host tree") << "rank " << r << ": " << e.dump();
      EXPECT_EQ(e["bootstrap"]["broadcast_barrier"], "host leaders") << "rank " << r << ": " << e.dump();
      EXPECT_EQ(e["bootstrap"]["gather"], "host leaders") << "rank " << r << ": " << e.dump();
      ++seen;
    }
    EXPECT_EQ(seen, r < 2 ? 6u : r < 4 ? 4u : 2u) << "rank " << r << " takes part in every world that holds it";
  }
}

// Rank 0's store on every interface (COMMBENCH_STORE_BIND=0.0.0.0, warned about): rank 0's own
// workers reach it through MASTER_ADDR like everyone else, so the address rank 0 serves its host
// tree on is one the other hosts reach (its host name need not resolve, or may resolve to a
// loopback address).
TEST(Launchers, AStoreOnEveryInterfaceStillGivesTheHostTreeAReachableRankZero) {
  const std::string body = gloo_and_ucx_run("wide", "6", R"("allreduce")", R"("64KiB")");
  JobDir dir, local;
  std::string why;
  const int rc = run_on_three_hosts(dir, local, "wide", body, "COMMBENCH_STORE_BIND=0.0.0.0", why);
  if (rc == 77) GTEST_SKIP() << why;
  ASSERT_EQ(rc, 0) << why;
  EXPECT_EQ(shape(dir.records()), shape(local.records()));
  for (const auto& e : dir.records("execution")) {
    EXPECT_EQ(e["status"], "ok") << e.dump();
    EXPECT_EQ(e["metadata"]["ranks"]["0"]["bootstrap"]["allgather"], "host tree") << e.dump();
  }
}

// A probe: Gloo across hosts without `iface` or `hostname` listens on loopback; the failure was
// "connect [127.0.0.1]:…: Connection refused (a connection to a peer failed; the peer probably
// exited)", kind remote. It says what is wrong and what to set now, as a configuration error.
TEST(Launchers, GlooAcrossHostsOnItsLoopbackDefaultSaysToSetIface) {
  JobDir dir;
  const auto file = dir.write("noiface.toml", R"(name = "noiface"
[[run]]
backend = "gloo"
ops = ["allreduce"]
sizes = ["4KiB"]
world_size = 6
iterations = 3
options.gloo = { timeout_ms = 5000 }
)");
  const std::string cmd = fmt::format("{}/tests/integration/multihost_netns.sh {} {} {} {} > {}/netns.txt 2>&1",
                                      COMMBENCH_SOURCE_DIR, COMMBENCH_BIN, file.string(), (dir.path() / "out").string(),
                                      (dir.path() / "logs").string(), dir.path().string());
  const int rc = WEXITSTATUS(std::system(cmd.c_str()));
  if (rc == 77) GTEST_SKIP() << read_text(dir.path() / "netns.txt");
  EXPECT_EQ(rc, 1) << read_text(dir.path() / "netns.txt");
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u) << read_text(dir.path() / "logs/task-0.log");
  const std::string reason = execs[0]["reason"];
  EXPECT_EQ(execs[0]["status"], "failed") << reason;
  EXPECT_NE(reason.find("gloo listens on 127.0.0.1 (its default, loopback), but this execution spans hosts"),
            std::string::npos) << reason;
  EXPECT_NE(reason.find("iface"), std::string::npos) << reason;
  EXPECT_EQ(execs[0]["failure_kind"], "invalid_argument") << reason;
}

// A one-node Slurm cluster started by the test (tests/integration/slurm_cluster.sh: munged,
// slurmctld, slurmd from a temporary directory, stopped by pid), then `srun -n 4`.
TEST(Launchers, SrunOnAOneNodeSlurmClusterMatchesALocalRun) {
  JobDir dir, local;
  const auto file = dir.write("x.toml", kExperiment);
  const std::string cmd = fmt::format(
      "cd {} && {}/tests/integration/slurm_cluster.sh srun -n 4 --overcommit --oversubscribe {} run {} -o {} --quiet "
      "> {}/slurm.txt 2>&1",
      dir.path().string(), COMMBENCH_SOURCE_DIR, COMMBENCH_BIN, file.string(), (dir.path() / "out").string(),
      dir.path().string());
  const int rc = WEXITSTATUS(std::system(cmd.c_str()));
  if (rc == 77) GTEST_SKIP() << read_text(dir.path() / "slurm.txt");
  ASSERT_EQ(rc, 0) << read_text(dir.path() / "slurm.txt");
  ASSERT_EQ(local.run(local.write("x.toml", kExperiment), {"--quiet"}).exit_code, 0);
  EXPECT_EQ(shape(dir.records()), shape(local.records()));
  EXPECT_NE(read_text(dir.job_folder() / "summary.json").find("\"launcher\": \"slurm\""), std::string::npos);
}

}  // namespace
}  // namespace commbench::testing
