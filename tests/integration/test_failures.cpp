// A plugin that crashes and one that hangs, each followed by a Gloo run in the same job: the bad
// runs are reported failed (rank, cause) within their timeout, and the Gloo results still appear.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "commbench/backend.h"

#include "job_harness.h"
#include "process_watch.h"

namespace commbench::testing {
namespace {

std::string experiment(const std::string& bad_backend, const std::string& options, int timeout_s) {
  return fmt::format(R"(
name = "faults"
plugin_path = ["{}"]
[[run]]
name = "bad"
backends = ["{}"]
ops = ["allreduce"]
sizes = ["4KiB"]
world_size = 3
warmup = 1
iterations = 20
timeout = "{}s"
[run.options.{}]
{}
[[run]]
name = "good"
backends = ["gloo"]
ops = ["allreduce"]
sizes = ["4KiB", "64KiB"]
world_size = 2
iterations = 3
)", COMMBENCH_TEST_PLUGIN_DIR, bad_backend, timeout_s, bad_backend, options);
}

// The bad run's one case broke: it has a record, `failed` with the execution's reason (it had
// none and was counted "not run").
void expect_broken_case_record(const JobDir& dir, const std::string& needle) {
  std::vector<nlohmann::json> bad;
  for (const auto& c : dir.records())
    if (c["run"] == "bad") bad.push_back(c);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0]["status"], "failed") << bad[0].dump();
  EXPECT_EQ(bad[0]["op"], "allreduce") << bad[0].dump();
  EXPECT_EQ(bad[0]["bytes"], 4096) << bad[0].dump();
  const std::string reason = bad[0]["reason"];
  EXPECT_EQ(reason.rfind("the execution failed in this case: ", 0), 0u) << reason;
  EXPECT_NE(reason.find(needle), std::string::npos) << reason;
  EXPECT_TRUE(bad[0]["samples_us"].empty()) << bad[0].dump();
  const auto execs = dir.records("execution");
  ASSERT_FALSE(execs.empty());
  EXPECT_EQ(bad[0]["failure_kind"], execs[0]["failure_kind"]) << bad[0].dump();
}

void expect_gloo_results(const JobDir& dir) {
  size_t good = 0;
  for (const auto& c : dir.records())
    if (c["run"] == "good" && c["status"] == "ok" && c["wrong"] == 0) ++good;
  EXPECT_EQ(good, 2u);
}

TEST(Failures, CrashingRankIsReportedAndTheJobGoesOn) {
  JobDir dir;
  const auto file = dir.write("crash.toml", experiment("crash", "crash_rank = 1\ncrash_after = 5\nmode = \"segv\"", 60));
  const CommandResult r = dir.run(file);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 2u);
  EXPECT_EQ(execs[0]["status"], "failed");
  EXPECT_EQ(execs[0]["failed_rank"], 1);
  const std::string reason = execs[0]["reason"];
  EXPECT_NE(reason.find("rank 1"), std::string::npos) << reason;
  EXPECT_NE(reason.find("SIGSEGV"), std::string::npos) << reason;
  EXPECT_EQ(execs[0]["failure_kind"], "crash") << execs[0].dump();
  EXPECT_EQ(execs[0]["cases_done"], 1) << execs[0].dump();
  EXPECT_EQ(execs[1]["status"], "ok");
  expect_broken_case_record(dir, "SIGSEGV");
  EXPECT_NE(r.output.find("1 case failed"), std::string::npos) << r.output;
  expect_gloo_results(dir);
  EXPECT_LT(r.seconds, 45.0);  // a crash is noticed at once, not at the 60 s timeout
}

TEST(Failures, AbortAndNonZeroExitAreReported) {
  for (const auto& [mode, needle] : {std::pair{"abort", "SIGABRT"}, std::pair{"exit", "exit code 7"}}) {
    JobDir dir;
    const auto file = dir.write("crash.toml", experiment("crash", fmt::format("crash_rank = 2\ncrash_after = 2\nmode = \"{}\"", mode), 60));
    const CommandResult r = dir.run(file, {"--quiet"});
    EXPECT_EQ(r.exit_code, 1) << r.output;
    const auto execs = dir.records("execution");
    ASSERT_EQ(execs.size(), 2u);
    EXPECT_EQ(execs[0]["failed_rank"], 2);
    EXPECT_NE(execs[0]["reason"].get<std::string>().find(needle), std::string::npos) << execs[0].dump();
    expect_gloo_results(dir);
  }
}

// A rank whose backend fails with CB_ERR_INTERNAL and a message full of "timeout" and "timed
// out" (issue 16): the agent goes by the status the worker reports, so that rank is the one
// blamed, at once, and not one of the peers left waiting for it.
TEST(Failures, AFailureIsJudgedByItsStatusNotByTheWordsOfItsMessage) {
  JobDir dir;
  const auto file = dir.write("error.toml", experiment("crash", "crash_rank = 1\ncrash_after = 5\nmode = \"error\"", 60));
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 2u);
  EXPECT_EQ(execs[0]["status"], "failed");
  EXPECT_EQ(execs[0]["failed_rank"], 1) << execs[0].dump();
  const std::string reason = execs[0]["reason"];
  EXPECT_NE(reason.find("(internal)"), std::string::npos) << reason;
  EXPECT_NE(reason.find("failed on purpose"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("gave up"), std::string::npos) << "judged a victim of a timeout: " << reason;
  EXPECT_EQ(reason.find("stuck"), std::string::npos) << reason;
  // The decision as data in the record: the plugin's status code, its kind, the phase.
  EXPECT_EQ(execs[0]["failure_kind"], "internal") << execs[0].dump();
  EXPECT_EQ(execs[0]["plugin_status"], static_cast<int>(CB_ERR_INTERNAL)) << execs[0].dump();
  EXPECT_NE(execs[0]["failed_phase"].get<std::string>().find("allreduce"), std::string::npos) << execs[0].dump();
  EXPECT_EQ(execs[1]["status"], "ok");
  EXPECT_EQ(execs[1]["failure_kind"], "");
  expect_broken_case_record(dir, "failed on purpose");
  expect_gloo_results(dir);
  EXPECT_LT(execs[0]["elapsed_s"].get<double>(), 30.0) << "noticed at once, not at the 60 s timeout";
}

// backend.h: "UNAVAILABLE skips the whole backend for this run". A probe found it did so only
// from init: from comm_create or post the run failed (exit 1).
TEST(Failures, UnavailableFromACommunicatorOrAnOpSkipsTheBackend) {
  for (const char* mode : {"unavailable_comm", "unavailable"}) {
    JobDir dir;
    const auto file =
        dir.write("unavailable.toml", experiment("crash", fmt::format("crash_rank = 1\ncrash_after = 5\nmode = \"{}\"", mode), 60));
    const CommandResult r = dir.run(file, {"--quiet"});
    EXPECT_EQ(r.exit_code, 0) << mode << "\n" << r.output;
    const auto execs = dir.records("execution");
    ASSERT_EQ(execs.size(), 2u) << mode;
    EXPECT_EQ(execs[0]["status"], "unavailable") << mode << ": " << execs[0].dump();
    EXPECT_EQ(execs[0]["failure_kind"], "unavailable") << mode << ": " << execs[0].dump();
    // The plugin's own code, as for a failed call (a probe found -1 recorded).
    EXPECT_EQ(execs[0]["plugin_status"], static_cast<int>(CB_ERR_UNAVAILABLE)) << mode << ": " << execs[0].dump();
    const std::string reason = execs[0]["reason"];
    EXPECT_NE(reason.find("on purpose"), std::string::npos) << mode << ": " << reason;
    EXPECT_NE(reason.find(std::string(mode) == "unavailable" ? "(during case" : "(during communicator creation)"),
              std::string::npos) << mode << ": " << reason;
    EXPECT_EQ(execs[1]["status"], "ok");
    expect_gloo_results(dir);
    EXPECT_LT(execs[0]["elapsed_s"].get<double>(), 30.0) << mode << ": noticed at once, not at the 60 s timeout";
  }
}

TEST(Failures, HangingRankTimesOutAndTheJobGoesOn) {
  JobDir dir;
  const int timeout_s = 4;
  const auto file = dir.write("hang.toml", experiment("hang", "hang_rank = 1\nhang_after = 3", timeout_s));
  const CommandResult r = dir.run(file);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 2u);
  EXPECT_EQ(execs[0]["status"], "failed");
  EXPECT_EQ(execs[0]["failed_rank"], 1);
  const std::string reason = execs[0]["reason"];
  EXPECT_NE(reason.find("timed out"), std::string::npos) << reason;
  EXPECT_NE(reason.find("rank 1 stuck"), std::string::npos) << reason;
  EXPECT_EQ(execs[0]["failure_kind"], "timeout") << execs[0].dump();
  EXPECT_EQ(execs[0]["plugin_status"], -1) << "the stuck rank never answered: " << execs[0].dump();
  // + the agent's 1.5 s backstop, up to 2 s for late reports, 2 s SIGTERM grace.
  EXPECT_LT(execs[0]["elapsed_s"].get<double>(), timeout_s + 6.0);
  EXPECT_EQ(execs[1]["status"], "ok");
  expect_gloo_results(dir);
  // The limit each execution ran under: the run's `timeout`, or, unset, one sized to its cases
  // (10 minutes plus per case), which the parsed experiment cannot state as one number.
  EXPECT_EQ(execs[0]["timeout_s"], static_cast<double>(timeout_s)) << execs[0].dump();
  EXPECT_GT(execs[1]["timeout_s"].get<double>(), 600.0) << execs[1].dump();
  std::ifstream summary(dir.job_folder() / "summary.json");
  const auto runs = nlohmann::json::parse(summary).at("experiment").at("runs");
  EXPECT_EQ(runs.at(0).at("timeout_s"), static_cast<double>(timeout_s));
  EXPECT_TRUE(runs.at(1).at("timeout_s").is_null()) << runs.at(1).dump();
}

// A worker stopped with SIGSTOP (a debugger, a frozen cgroup) holds its peers up inside a
// collective. At the timeout the stopped rank is named, not the peers waiting for it, and the
// execution ends within the documented bound: timeout + 1.5 s backstop + 2 s for reports.
TEST(Failures, AStoppedRankIsNamedAndTheOthersAreNotBlamed) {
  JobDir dir;
  const double timeout_s = 15;
  const auto file = dir.write("stop.toml", R"(
name = "stopped-rank"
[[run]]
name = "stopped"
backend = "gloo"
world_size = 3
ops = ["allreduce"]
sizes = ["1MiB"]
warmup = 1
iterations = 100000
timeout = "15s"
[[run]]
name = "after"
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 3
)");
  BackgroundCommbench job({"run", file.string(), "-o", (dir.path() / "out").string(), "--quiet"}, dir.path(),
                          dir.path() / "run.txt");
  std::vector<pid_t> rank1;
  for (int i = 0; i < 400 && rank1.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    rank1 = workers_logging_under(dir.path(), 1);
  }
  ASSERT_EQ(rank1.size(), 1u) << read_text(dir.path() / "run.txt");
  std::this_thread::sleep_for(std::chrono::seconds(3));  // well into the measurements
  ASSERT_EQ(::kill(rank1[0], SIGSTOP), 0);
  const int rc = job.wait(60);
  ::kill(rank1[0], SIGCONT);  // in case it outlived the job (it must not: checked below)
  EXPECT_EQ(rc, 1) << read_text(dir.path() / "run.txt");
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 2u) << read_text(dir.path() / "run.txt");
  EXPECT_EQ(execs[0]["status"], "failed");
  EXPECT_EQ(execs[0]["failed_rank"], 1) << execs[0].dump();
  const std::string reason = execs[0]["reason"];
  EXPECT_NE(reason.find("rank 1 stopped responding"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("rank 0 stuck"), std::string::npos) << reason;
  EXPECT_EQ(reason.find("rank 2 stuck"), std::string::npos) << reason;
  EXPECT_LE(execs[0]["elapsed_s"].get<double>(), timeout_s + 3.5) << reason;
  EXPECT_EQ(execs[1]["status"], "ok") << "the job goes on: " << execs[1].dump();
  EXPECT_TRUE(workers_logging_under(dir.path()).empty()) << "no worker outlives the job";
}

TEST(Failures, MeasuredCasesSurviveALaterCrash) {
  JobDir dir;
  // Two sizes succeed before the crash (crash_after counts posts across cases).
  const auto file = dir.write("partial.toml", fmt::format(R"(
name = "partial"
plugin_path = ["{}"]
[[run]]
backends = ["crash"]
ops = ["allreduce"]
sizes = ["1KiB", "2KiB", "4KiB", "8KiB"]
world_size = 2
warmup = 0
iterations = 2
check = false
[run.options.crash]
crash_rank = 0
crash_after = 6
mode = "segv"
)", COMMBENCH_TEST_PLUGIN_DIR));
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto cases = dir.records();
  ASSERT_GE(cases.size(), 2u) << r.output;
  EXPECT_LE(cases.size(), 4u);
  // The sizes measured before the crash keep their records; the one it broke is `failed`.
  for (size_t i = 0; i + 1 < cases.size(); ++i) EXPECT_EQ(cases[i]["status"], "ok") << cases[i].dump();
  EXPECT_EQ(cases.back()["status"], "failed") << cases.back().dump();
  EXPECT_NE(cases.back()["reason"].get<std::string>().find("SIGSEGV"), std::string::npos) << cases.back().dump();
}

// A size that cannot be allocated is skipped on every rank with a record saying so; the sizes
// around it are measured and the job succeeds.
TEST(Failures, ASizeThatDoesNotFitIsSkippedNotFatal) {
  // Under vm.overcommit_memory = 1 the allocation would succeed and filling it would invoke the
  // OOM killer; the heuristic (0) and strict (2) modes refuse it up front.
  if (read_text("/proc/sys/vm/overcommit_memory").rfind("1", 0) == 0)
    GTEST_SKIP() << "vm.overcommit_memory = 1: a 1 PiB allocation would not fail cleanly here";
  JobDir dir;
  const auto file = dir.write("big.toml", R"(
name = "too-big"
[[run]]
backend = "gloo"
world_size = 2
ops = ["allreduce", "all_pairs"]
sizes = ["4KiB", "1048576GiB"]
dtype = "f32"
warmup = 1
iterations = 2
)");
  const CommandResult r = dir.run(file);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped (too big)"), std::string::npos) << r.output;
  int ok = 0, skipped = 0;
  for (const auto& c : dir.records()) {
    if (c["status"] == "ok") ++ok;
    if (c["status"] == "skipped") {
      ++skipped;
      EXPECT_NE(c["reason"].get<std::string>().find("does not fit in memory"), std::string::npos) << c.dump();
    }
  }
  EXPECT_EQ(ok, 1);       // allreduce 4 KiB (the all_pairs sweep holds the largest size: all skipped)
  EXPECT_EQ(skipped, 5);  // allreduce 1 PiB; all_pairs 0->1 and 1->0 at 4 KiB and 1 PiB
  // Every case the plan counted is accounted for: the all_pairs records name their pair.
  EXPECT_NE(r.output.find("done: 6/6 cases"), std::string::npos) << r.output;
}

// Issue 28 §5: a plugin that ends its process with _exit(0) in the middle of an op. The rank's
// exit code says "fine", but it never sent its result: that rank is the failure, named at once,
// not its peer after the whole timeout.
TEST(Failures, AWorkerThatExitsCleanlyWithoutItsResultIsThatRanksFailureAtOnce) {
  JobDir dir;
  const auto file = dir.write("exit0.toml", experiment("crash", "crash_rank = 1\ncrash_after = 5\nmode = \"exit0\"", 60));
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 2u) << r.output;
  EXPECT_EQ(execs[0]["status"], "failed");
  EXPECT_EQ(execs[0]["failed_rank"], 1) << execs[0].dump();
  EXPECT_EQ(execs[0]["failure_kind"], "crash") << execs[0].dump();
  const std::string reason = execs[0]["reason"];
  EXPECT_NE(reason.find("rank 1 exited with code 0"), std::string::npos) << reason;
  EXPECT_NE(reason.find("before sending its result"), std::string::npos) << reason;
  EXPECT_LT(execs[0]["elapsed_s"].get<double>(), 30.0) << "noticed at once, not at the 60 s timeout";
  EXPECT_EQ(execs[1]["status"], "ok");
  expect_gloo_results(dir);
}

bool process_alive(pid_t pid) {
  const std::string stat = read_text(fmt::format("/proc/{}/stat", pid));
  if (stat.empty()) return false;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// Issue 28 §10: a plugin that starts processes, one in its worker's process group and one
// detached from it (setsid, double fork, as a daemon does). Neither outlives the job.
TEST(Failures, NothingAWorkerStartsOutlivesTheJob) {
  JobDir dir;
  const auto pid_file = dir.path() / "sleepers.txt";
  const auto file = dir.write("spawn.toml", experiment("crash", fmt::format("crash_rank = 1\ncrash_after = 3\n"
                                                                            "mode = \"spawn\"\npid_file = \"{}\"",
                                                                            pid_file.string()), 60));
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(read_text(pid_file));
  pid_t in_group = -1, detached = -1;
  in >> in_group >> detached;
  ASSERT_GT(in_group, 0) << read_text(pid_file);
  ASSERT_GT(detached, 0) << read_text(pid_file);
  bool alive = true;
  for (int i = 0; i < 40 && alive; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(50)))
    alive = process_alive(in_group) || process_alive(detached);
  EXPECT_FALSE(process_alive(in_group)) << "the process left in the worker's group outlived the job";
  EXPECT_FALSE(process_alive(detached)) << "the detached process outlived the job";
  for (pid_t p : {in_group, detached})
    if (process_alive(p)) ::kill(p, SIGKILL);
  EXPECT_NE(r.output.find(fmt::format("ended process {}", detached)), std::string::npos) << r.output;
}

// A probe: SIGTERM to `commbench report` (as `timeout`, a batch time limit or a CI cancel send
// it, to the pid) ended commbench and left its Python child writing the report into the folder,
// orphaned. The signal now reaches Python, commbench waits for it and exits 128 + 15 saying so.
// The "Python" here is a script that records its pid and sleeps: the test does not race a report.
TEST(Failures, ASignalToAReportCommandEndsItsPythonToo) {
  JobDir dir;
  const auto pid_file = dir.path() / "python.pid";
  const auto fake = dir.path() / "fake-python";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\necho $$ > " << pid_file.string() << "\nexec sleep 120\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  std::filesystem::create_directories(dir.path() / "job");
  ::setenv("COMMBENCH_PYTHON", fake.c_str(), 1);
  BackgroundCommbench report({"report", (dir.path() / "job").string()}, dir.path(), dir.path() / "report.log");
  ::unsetenv("COMMBENCH_PYTHON");
  pid_t python = -1;
  for (int i = 0; i < 200 && python <= 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    std::ifstream in(pid_file);
    if (!(in >> python)) python = -1;
  }
  ASSERT_GT(python, 0) << read_text(dir.path() / "report.log");
  ::kill(report.pid(), SIGTERM);
  EXPECT_EQ(report.wait(30), 128 + SIGTERM) << read_text(dir.path() / "report.log");
  EXPECT_NE(::kill(python, 0), 0) << "Python (pid " << python << ") outlived the report command";
  EXPECT_NE(read_text(dir.path() / "report.log").find("stopped by signal 15 (SIGTERM)"), std::string::npos)
      << read_text(dir.path() / "report.log");
  if (::kill(python, 0) == 0) ::kill(python, SIGKILL);
}

// COMMBENCH_PYTHON=/bin/false: `compare` exited 1 ("regressed") and `check` 1 ("expectations
// missed") without a word. An interpreter that never ran commbench's bootstrap is named, exit 2;
// the real Python's own verdicts are untouched.
TEST(Failures, AnInterpreterThatNeverRanThePackageIsNamedNotTakenForAVerdict) {
  JobDir dir;
  std::filesystem::create_directories(dir.path() / "a");
  std::filesystem::create_directories(dir.path() / "b");
  const auto fake = dir.path() / "fails-at-once";
  {
    std::ofstream f(fake);
    f << "#!/bin/sh\nexit 1\n";
  }
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  ::setenv("COMMBENCH_PYTHON", fake.c_str(), 1);
  const CommandResult compare = run_commbench({"compare", (dir.path() / "a").string(), (dir.path() / "b").string()}, dir.path());
  const CommandResult check = run_commbench({"check", (dir.path() / "a").string()}, dir.path());
  ::unsetenv("COMMBENCH_PYTHON");
  for (const CommandResult* r : {&compare, &check}) {
    EXPECT_EQ(r->exit_code, 2) << r->output;
    EXPECT_NE(r->output.find("the Python interpreter '" + fake.string() + "' exited with code 1 before it ran "
                             "commbench's Python package"),
              std::string::npos)
        << r->output;
  }
  // The real interpreter on folders that are no results: its own message and code, no such line.
  const CommandResult real = run_commbench({"check", (dir.path() / "a").string()}, dir.path());
  EXPECT_NE(real.exit_code, 0) << real.output;
  EXPECT_EQ(real.output.find("before it ran commbench's Python package"), std::string::npos) << real.output;
}

}  // namespace
}  // namespace commbench::testing
