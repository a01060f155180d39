#include <csignal>

#include <gtest/gtest.h>

#include "plugin/captured_process.h"
#include "test_plugin_helpers.h"

namespace commbench {
namespace {

using namespace std::chrono_literals;
using End = CapturedRun::End;

CapturedRun sh(const std::string& script, std::chrono::milliseconds timeout = 5s) {
  return run_captured({"/bin/sh", "-c", script}, timeout);
}

TEST(CapturedProcess, SeparatesStdoutAndStderrAndKeepsTheExitCode) {
  CapturedRun run = sh("printf out; printf err >&2; exit 3");
  EXPECT_EQ(run.end, End::Exited);
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(run.out, "out");
  EXPECT_EQ(run.err, "err");
}

TEST(CapturedProcess, StdinIsEmpty) {
  CapturedRun run = sh("cat; echo done");
  EXPECT_EQ(run.out, "done\n") << "reading stdin must see end of file, not block";
}

TEST(CapturedProcess, ReportsTheSignalThatKilledIt) {
  CapturedRun run = sh("kill -SEGV $$");
  EXPECT_EQ(run.end, End::Signaled);
  EXPECT_EQ(run.signal, SIGSEGV);
  EXPECT_TRUE(test::contains(describe_end(run, 5s), "signal 11"));
}

TEST(CapturedProcess, TheChildGetsDefaultSignalHandlingWhateverTheCallerDid) {
  struct sigaction ignore {}, previous{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGINT, &ignore, &previous);  // inherited across exec unless reset
  CapturedRun run = sh("kill -INT $$; exit 0");
  ::sigaction(SIGINT, &previous, nullptr);
  EXPECT_EQ(run.end, End::Signaled);
  EXPECT_EQ(run.signal, SIGINT);
}

TEST(CapturedProcess, KillsAProcessThatOutlivesTheTimeout) {
  auto start = std::chrono::steady_clock::now();
  CapturedRun run = sh("echo started; exec sleep 30", 300ms);
  EXPECT_EQ(run.end, End::TimedOut);
  EXPECT_EQ(run.out, "started\n") << "output before the timeout is kept";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_TRUE(test::contains(describe_end(run, 300ms), "did not finish within 0.3 s"));
}

TEST(CapturedProcess, AProcessThatClosesItsOutputAndHangsStillTimesOut) {
  CapturedRun run = sh("exec >&- 2>&-; exec sleep 30", 300ms);
  EXPECT_EQ(run.end, End::TimedOut);
}

TEST(CapturedProcess, ALargeOutputIsDrainedAndTruncated) {
  CapturedRun run = run_captured({"/bin/sh", "-c", "head -c 300000 /dev/zero"}, 5s, 1000);
  EXPECT_EQ(run.end, End::Exited) << "the child must not block on a full pipe";
  EXPECT_EQ(run.out.size(), 1000u);
}

TEST(CapturedProcess, AMissingProgramIsASpawnFailure) {
  CapturedRun run = run_captured({"/nonexistent/program"}, 1s);
  EXPECT_EQ(run.end, End::SpawnFailed);
  EXPECT_TRUE(test::contains(run.spawn_error, "/nonexistent/program"));
}

}  // namespace
}  // namespace commbench
