// Finding rank 0 under real launchers when the obvious address is wrong, and blaming the right
// task when one of a launch's workers dies: torchrun's own store on MASTER_PORT, a stale
// rendezvous file left by a dead job, a worker killed under a 2-task launch.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "../unit/test_common.h"
#include "job_harness.h"

namespace commbench::testing {
namespace launch_rendezvous_test {

namespace fs = std::filesystem;

const char* kTwoRanks = R"(
name = "rendezvous"
[[run]]
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 3
)";

int task_exit(const JobDir& dir, int rank) {
  return std::stoi(read_text(dir.path() / fmt::format("exit-{}", rank)));
}

// torchrun's static rendezvous: its agent holds MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True).
// A listener stands in for that store; rank 0 once failed to bind it and rank 1 waited 2 min.
TEST(LaunchRendezvous, UnderTorchrunsAgentStoreRankZeroListensOnAPortOfItsOwn) {
  JobDir dir;
  const auto file = dir.write("x.toml", kTwoRanks);
  const int port = commbench::test::free_port();
  const std::string cmd = fmt::format(
      "cd {0} && python3 -c 'import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); "
      "s.bind((\"0.0.0.0\", {1})); s.listen(); open(\"listening\", \"w\").close(); time.sleep(120)' & store=$!; "
      "for i in $(seq 50); do [ -f listening ] && break; sleep 0.1; done; "
      "TMPDIR={0} TORCHELASTIC_USE_AGENT_STORE=True TORCHELASTIC_RUN_ID=t1 COMMBENCH_RENDEZVOUS_TIMEOUT=30 "
      "{2}/tests/integration/launch_tasks.sh {3} {0} 2 {1} -1 0 -- run {4} -o {0}/out --quiet; rc=$?; kill $store; exit $rc",
      dir.path().string(), port, COMMBENCH_SOURCE_DIR, COMMBENCH_BIN, file.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  for (int k = 0; k < 2; ++k) EXPECT_EQ(task_exit(dir, k), 0) << read_text(dir.path() / fmt::format("task-{}.log", k));
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "ok") << execs[0].dump();
  EXPECT_FALSE(fs::exists(dir.path() / "out" / (".rendezvous-torchrun-t1-" + std::to_string(port))))
      << "the rendezvous file is gone with the job";
}

// A rendezvous file left by a dead job with the same id (a rank 0 killed with SIGKILL; Open MPI's
// job ids repeat): rank 1 reads its dead address before this job's rank 0 replaces the file. It
// once retried that address for the whole rendezvous timeout; it now reads the file again. Twice:
// nobody listens at the dead address, and someone else does (the port reused: a listener that
// accepts and hangs up, as a store of another job or another program would answer).
TEST(LaunchRendezvous, AStaleRendezvousFileIsReadAgainUntilRankZeroReplacesIt) {
  for (const bool reused : {false, true}) {
    JobDir dir;
    const auto file = dir.write("x.toml", kTwoRanks);
    const fs::path out = dir.path() / "out", tmp = dir.path() / "tmp";
    fs::create_directories(out);
    fs::create_directories(tmp);
    const int dead = commbench::test::free_port();
    const fs::path stale = out / ".rendezvous-job-stale";
    {
      std::ofstream f(stale);
      f << "job-stale\n127.0.0.1\n" << dead << "\n";
    }
    fs::permissions(stale, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
    const std::string listener =
        reused ? fmt::format("python3 -c 'import socket,time\ns=socket.socket(); s.bind((\"127.0.0.1\", {})); s.listen()\n"
                             "while True: c,_=s.accept(); c.close()' & other=$!; sleep 0.5; ", dead)
               : "other=; ";
    const std::string env = fmt::format("TMPDIR={} OMPI_MCA_ess_base_jobid=job-stale OMPI_COMM_WORLD_SIZE=2 "
                                        "OMPI_COMM_WORLD_LOCAL_SIZE=2 COMMBENCH_RENDEZVOUS_TIMEOUT=60",
                                        tmp.string());
    const std::string cmd = fmt::format(
        "cd {0} || exit 1; {5}start=$(date +%s%N); "
        "{1} OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_LOCAL_RANK=1 {2} run {3} -o {4} --quiet > task-1.log 2>&1 & one=$!; "
        "sleep 2; {1} OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_LOCAL_RANK=0 {2} run {3} -o {4} --quiet > task-0.log 2>&1; "
        "echo $? > exit-0; wait $one; echo $? > exit-1; "
        "echo \"scale=3; ($(date +%s%N) - $start) / 1000000000\" | bc > took; [ -n \"$other\" ] && kill $other; true",
        dir.path().string(), env, COMMBENCH_BIN, file.string(), out.string(), listener);
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    EXPECT_EQ(task_exit(dir, 0), 0) << "reused " << reused << ": " << read_text(dir.path() / "task-0.log");
    EXPECT_EQ(task_exit(dir, 1), 0) << "reused " << reused << ": " << read_text(dir.path() / "task-1.log");
    EXPECT_LT(std::stod(read_text(dir.path() / "took")), 30.0) << "rank 1 waited for the dead address";
    ASSERT_EQ(dir.records("execution").size(), 1u);
    EXPECT_EQ(dir.records("execution")[0]["status"], "ok");
  }
}

// Rank 1's worker killed in a 2-task launch: rank 0 then fails too ("remote": its peer went
// away; once, now and then, SIGPIPE), and agent 0 sees both. The record must name rank 1, the
// cause; it named rank 0 in about one run of three. A few runs, since the race is what is tested.
TEST(LaunchRendezvous, AKilledWorkerIsBlamedNotThePeerThatSawItGo) {
  JobDir dir;
  const auto file = dir.write("worker.toml", R"(
name = "worker-kill"
[[run]]
name = "long"
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB", "4MiB"]
warmup = 1
iterations = 20000
timeout = "30s"
)");
  for (int attempt = 0; attempt < 3; ++attempt) {
    fs::remove_all(dir.path() / "out");
    const std::string cmd = fmt::format(
        "KILL_WORKER=1 {}/tests/integration/launch_tasks.sh {} {} 2 {} 1 2.5 -- run {} -o {} --quiet", COMMBENCH_SOURCE_DIR,
        COMMBENCH_BIN, dir.path().string(), commbench::test::free_port(), file.string(), (dir.path() / "out").string());
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    for (int k : {0, 1}) EXPECT_EQ(task_exit(dir, k), 1) << read_text(dir.path() / fmt::format("task-{}.log", k));
    const auto execs = dir.records("execution");
    ASSERT_EQ(execs.size(), 1u) << read_text(dir.path() / "task-0.log");
    EXPECT_EQ(execs[0]["status"], "failed") << execs[0].dump();
    EXPECT_EQ(execs[0]["failed_rank"], 1) << "attempt " << attempt << ": " << execs[0].dump();
    EXPECT_EQ(execs[0]["failure_kind"], "crash") << execs[0].dump();
    EXPECT_NE(execs[0]["reason"].get<std::string>().find("SIGKILL"), std::string::npos) << execs[0].dump();
  }
}

}  // namespace launch_rendezvous_test
}  // namespace commbench::testing
