// `commbench conformance` on the GPU plugins (issue 16 §1): nccl and ncclx pass the suite on
// device memory at 1-4 ranks (as many as the host has GPUs, on real hardware), blocking and
// non-blocking; and each of the simulated GPU's fault knobs makes the suite fail with the
// fault's own reason, the failing check named, and a non-zero exit.
#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

// The largest world the host allows (4 on the simulated GPU).
int max_world() { return real_gpu_mode() ? std::min(4, visible_gpus()) : 4; }

// `commbench conformance <plugin> <args>` with `env` (NAME=value ...) in front, from `dir`. On the
// simulated GPU the size ladder stops at 256 KiB: its NCCL moves data on the CPU, and the 4 MiB
// default (what a real GPU runs, and the acceptance script) costs minutes per pass there; the
// ladder's logic is proven on host memory by the integration tests.
CommandResult conformance(const JobDir& dir, const std::string& plugin, const std::vector<std::string>& args,
                          const std::string& env = "") {
  // A failing run keeps its ranks' logs under $TMPDIR: in the test's folder, removed with it.
  std::string cmd = fmt::format("cd {0} && env TMPDIR={0} {1} {2} conformance {3} -P {4}{5}",
                                shell_quote(dir.path().string()), env, shell_quote(commbench_bin()),
                                shell_quote(plugin), shell_quote(plugin_dir()), real_gpu_mode() ? "" : " --max-bytes 256KiB");
  for (const auto& a : args) cmd += " " + shell_quote(a);
  return run_shell(cmd);
}

struct Row {
  bool found = false;
  std::string result;  // pass, skip, FAIL
  std::string detail;
};

// The table row of `check` at `world` ranks ("1 rank", "2 ranks" ... in the first column).
Row row(const std::string& output, int world, const std::string& check) {
  const std::string ranks = world == 1 ? "1 rank" : fmt::format("{} ranks", world);
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(ranks + " ", 0) != 0) continue;
    std::string rest = line.substr(ranks.size());
    rest.erase(0, rest.find_first_not_of(' '));
    if (rest.rfind(check + " ", 0) != 0) continue;
    std::smatch m;
    const std::string tail = rest.substr(check.size());
    if (!std::regex_match(tail, m, std::regex(R"(\s+(pass|skip|FAIL)\s*(.*))"))) continue;
    return Row{true, m[1], m[2]};
  }
  return Row{};
}

bool has_line_starting(const std::string& output, const std::string& prefix) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return true;
  return false;
}

// Every world from 1 to `hi` passed, on device memory, with the checks that need a GPU passing.
void expect_passes(const CommandResult& r, int hi) {
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has_line_starting(r.output, "verdict: PASS")) << r.output;
  EXPECT_EQ(r.output.find(" FAIL "), std::string::npos) << r.output;
  for (int w = 1; w <= hi; ++w) {
    SCOPED_TRACE(fmt::format("{} rank(s)", w));
    for (const char* check : {"comm_create", "op allreduce (cuda)", "op allgather (cuda)", "op broadcast (cuda)",
                              "op alltoall (cuda)", "collectives in flight together", "unadvertised capabilities refused",
                              "bad arguments refused", "comm create/destroy without leaks", "finalize"}) {
      const Row x = row(r.output, w, check);
      EXPECT_TRUE(x.found && x.result == "pass") << check << ": " << x.result << " " << x.detail << "\n" << r.output;
    }
    // The leak check looked at device memory too (cudaMemGetInfo), not only the host's RSS.
    EXPECT_NE(row(r.output, w, "comm create/destroy without leaks").detail.find("device memory"), std::string::npos);
    // No host memory slipped in: the plugins advertise device memory only.
    EXPECT_FALSE(row(r.output, w, "op allreduce").found) << r.output;
    if (w >= 2)
      for (const char* check : {"op sendrecv (cuda)", "op bidir_bw (cuda)", "timeout", "abort with an op pending"}) {
        const Row x = row(r.output, w, check);
        EXPECT_TRUE(x.found && x.result == "pass") << check << ": " << x.result << " " << x.detail;
      }
  }
}

TEST(ConformanceOnGpu, NcclPassesAtOneToFourRanksWithAVerdictAndJUnit) {
  REQUIRE_NCCL("nccl", 1);
  JobDir dir;
  const int hi = max_world();
  // Each simulated communicator holds 8 MiB of device memory, so a communicator the plugin
  // failed to free would show in the leak check's cudaMemGetInfo.
  const CommandResult r = conformance(dir, "nccl", {"--ranks", fmt::format("1-{}", hi), "--junit", "c.xml"},
                                      "SIMGPU_NCCL_COMM_MEMORY=8M");
  expect_passes(r, hi);
  const std::string junit = read_text(dir.path() / "c.xml");
  EXPECT_NE(junit.find("<testsuites name=\"commbench conformance nccl\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("failures=\"0\""), std::string::npos) << junit;
  EXPECT_EQ(junit.find("<failure"), std::string::npos) << junit;
}

TEST(ConformanceOnGpu, NcclNonBlockingCommunicatorsPass) {
  REQUIRE_NCCL("nccl", 1);
  JobDir dir;
  const int hi = std::min(2, max_world());
  // 2 ms instead of the simulation's 20 ms between a non-blocking call and its launch.
  const CommandResult r = conformance(dir, "nccl", {"--ranks", fmt::format("1-{}", hi), "-O", "blocking=off"},
                                      "SIMGPU_NCCL_LAUNCH_DELAY_MS=2");
  expect_passes(r, hi);
}

TEST(ConformanceOnGpu, NcclxPassesAtOneToFourRanks) {
  REQUIRE_NCCL("ncclx", 1);
  if (ncclx_library().empty()) GTEST_SKIP() << "no NCCLX library (real mode: set COMMBENCH_NCCLX_LIBRARY)";
  JobDir dir;
  const int hi = max_world();
  const CommandResult r =
      conformance(dir, "ncclx", {"--ranks", fmt::format("1-{}", hi), "-O", "library=" + ncclx_library()});
  expect_passes(r, hi);
  EXPECT_NE(r.output.find("commbench conformance: ncclx"), std::string::npos) << r.output;
}

// A fault of the simulated GPU, the check it must fail, and what the reason must say.
struct Fault {
  const char* env;
  const char* check;
  std::vector<const char*> reason;
};

void PrintTo(const Fault& f, std::ostream* os) { *os << f.env; }

class ConformanceFaultOnGpu : public ::testing::TestWithParam<Fault> {};

TEST_P(ConformanceFaultOnGpu, FailsTheRightCheckWithTheFaultsReasonAndExitsNonZero) {
  REQUIRE_SIMULATION();
  REQUIRE_NCCL("nccl", 2);
  const Fault& f = GetParam();
  JobDir dir;
  const CommandResult r = conformance(dir, "nccl", {"--ranks", "2", "--op-timeout", "3"}, f.env);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has_line_starting(r.output, "verdict: FAIL")) << r.output;
  const Row x = row(r.output, 2, f.check);
  ASSERT_TRUE(x.found) << f.check << "\n" << r.output;
  EXPECT_EQ(x.result, "FAIL") << r.output;
  for (const char* s : f.reason) EXPECT_NE(x.detail.find(s), std::string::npos) << s << " not in: " << x.detail;
  // The ranks' logs are kept for a failed run.
  EXPECT_NE(r.output.find("The ranks' logs"), std::string::npos) << r.output;
}

// (Outside the macro: the braces' commas would split its arguments.)
const Fault kFaults[] = {
    {"SIMGPU_FAIL_COMM_INIT=1", "comm_create", {"comm_create failed", "SIMGPU_FAIL_COMM_INIT"}},
    // The op that failed is reported, at its wait, by the rank it failed on (and rank 0, whose
    // peer then aborted, as the victim).
    {"SIMGPU_ASYNC_ERROR_AFTER=5 SIMGPU_FAULT_RANK=1", "op allreduce (cuda)",
     {"rank 1:", "wait failed", "SIMGPU_ASYNC_ERROR_AFTER"}},
    {"SIMGPU_HANG_AFTER=5", "op allreduce (cuda)", {"wait failed (timeout)", "did not complete within the timeout"}},
    {"SIMGPU_FAIL_MALLOC_AFTER=10", "op allreduce (cuda)", {"mem_alloc failed (resource exhausted)", "out of memory"}},
};
const char* const kFaultNames[] = {"FailCommInit", "AsyncErrorAfterFiveOps", "HangAfterFiveOps", "FailMallocAfterTen"};

INSTANTIATE_TEST_SUITE_P(Knobs, ConformanceFaultOnGpu, ::testing::ValuesIn(kFaults),
                         [](const ::testing::TestParamInfo<Fault>& i) { return std::string(kFaultNames[i.index]); });

// One rank's init fails; the other stays inside its blocking NCCL init (it cannot be abandoned):
// the stage fails as a hung rank, and says which check failed first and where.
TEST(ConformanceOnGpu, InitFailingOnOneRankNamesItWhenThePeerHangsInBlockingInit) {
  REQUIRE_SIMULATION();
  REQUIRE_NCCL("nccl", 2);
  JobDir dir;
  const CommandResult r = conformance(dir, "nccl", {"--ranks", "2", "--op-timeout", "2"},
                                      "SIMGPU_FAIL_COMM_INIT=1 SIMGPU_FAULT_RANK=1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const Row init = row(r.output, 2, "comm_create");
  EXPECT_EQ(init.result, "FAIL") << r.output;
  EXPECT_EQ(init.detail.rfind("rank 1: ", 0), 0u) << init.detail;
  const Row hung = row(r.output, 2, "rank processes");
  EXPECT_EQ(hung.result, "FAIL") << r.output;
  EXPECT_NE(hung.detail.find("rank 0 hung in conformance: comm_create"), std::string::npos) << hung.detail;
  EXPECT_NE(hung.detail.find("'comm_create' failed first (rank 1)"), std::string::npos) << hung.detail;
}

}  // namespace
}  // namespace commbench::testing
