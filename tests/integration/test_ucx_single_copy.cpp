// UCX's single-copy shared-memory transfers (cma): by default commbench has a rendezvous message
// read with one process_vm_readv, and in pieces when single_copy_segment asks for them. An
// LD_PRELOAD shim in the workers (pvm_counter.c) counts the calls.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

struct SingleCopyJob {
  std::string setting;  // rank 0's metadata: single_copy_segment
  unsigned long calls = 0;  // process_vm_readv calls of both workers
  std::string logs;     // both workers' logs
};

// A 2-rank in-place allgather of 4 MiB blocks, 10 timed ops, with `options` for ucx and
// `env` (TOML key = "value" pairs) in the workers' environment. Protocol v1, where UCX reads a
// rendezvous message with process_vm_readv (v2, UCX's default from 1.16, may move it otherwise).
SingleCopyJob run_allgather(const std::string& options, const std::string& env = "") {
  JobDir dir;
  const auto counts = dir.path() / "pvm";
  std::filesystem::create_directories(counts);
  const auto file = dir.write("scopy.toml", fmt::format(R"(name = "scopy"
[[run]]
name = "allgather"
backend = "ucx"
ops = ["allgather"]
sizes = ["4MiB"]
placement = "in_place"
world_size = 2
warmup = 1
iterations = 10
env = {{ LD_PRELOAD = "{}", COMMBENCH_TEST_PVM_DIR = "{}"{} }}
[run.options.ucx]
protocols = "v1"
{}
)", COMMBENCH_TEST_PVM_COUNTER, counts.string(), env.empty() ? "" : ", " + env, options));
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  SingleCopyJob job;
  if (r.exit_code != 0) return job;
  for (const auto& c : dir.records()) EXPECT_EQ(c["wrong"], 0) << c.dump();
  const auto execs = dir.records("execution");
  EXPECT_EQ(execs.size(), 1u);
  if (!execs.empty()) job.setting = execs[0]["metadata"]["ranks"]["0"]["backend"].value("single_copy_segment", "(none)");
  for (const auto& f : std::filesystem::directory_iterator(counts)) {
    unsigned long n = 0;
    std::ifstream(f.path()) >> n;
    job.calls += n;
  }
  for (const char* rank : {"rank0", "rank1"})
    job.logs += read_text(dir.job_folder() / "logs" / (std::string("exec0-ucx-w2-") + rank + ".log"));
  return job;
}

TEST(UcxSingleCopy, AMessageIsReadInOneCallByDefaultAndInPiecesWhenAsked) {
  REQUIRE_PLUGINS("ucx");
  const SingleCopyJob whole = run_allgather("");
  if (whole.setting.starts_with("unused"))
    GTEST_SKIP() << "no single-copy transport here: " << whole.setting;
  if (whole.setting.starts_with("UCX_"))
    GTEST_SKIP() << "the environment sets the piece size: " << whole.setting;
  EXPECT_EQ(whole.setting, "inf (commbench's default: one process_vm_readv per message; UCX's is 512K)");
  // At least 11 ops on each rank, each reading the peer's 4 MiB block.
  EXPECT_GE(whole.calls, 22u) << "the allgather's blocks were not read with process_vm_readv";
  const SingleCopyJob pieces = run_allgather("single_copy_segment = \"512KiB\"");
  EXPECT_EQ(pieces.setting, "524288 (single_copy_segment = \"524288\")");
  // The same ops, each block in eight pieces: UCX's own default, and what the default avoids.
  EXPECT_GE(pieces.calls, 7 * whole.calls) << whole.calls << " calls whole, " << pieces.calls << " in pieces";
  for (const char* warning : {"invalid configuration", "unused env"}) {  // 1.17: "unused environment"
    EXPECT_EQ(whole.logs.find(warning), std::string::npos) << whole.logs;
    EXPECT_EQ(pieces.logs.find(warning), std::string::npos) << pieces.logs;
  }
}

// Where no single-copy transport runs, nothing is set: UCX would warn about a setting no
// transport took ("invalid configuration: SCOPY_SEG_SIZE=inf").
TEST(UcxSingleCopy, NothingIsSetWhereTheTransportsLeaveNoSingleCopyTransport) {
  REQUIRE_PLUGINS("ucx");
  for (const char* transports : {"tcp", "^cma,knem"}) {
    const SingleCopyJob job = run_allgather(fmt::format("transports = \"{}\"", transports));
    EXPECT_TRUE(job.setting.starts_with("unused (")) << transports << ": " << job.setting;
    EXPECT_EQ(job.calls, 0u) << transports;
    EXPECT_EQ(job.logs.find("invalid configuration"), std::string::npos) << transports << "\n" << job.logs;
  }
  // UCX_TLS as UCX reads it: a strict name (\cma) names cma; a strict alias (\sm) names nothing.
  const SingleCopyJob strict = run_allgather("", R"(UCX_TLS = '^\cma,knem')");
  EXPECT_TRUE(strict.setting.starts_with("unused (")) << strict.setting;
  EXPECT_EQ(strict.calls, 0u);
  EXPECT_EQ(strict.logs.find("invalid configuration"), std::string::npos) << strict.logs;
  const SingleCopyJob strict_alias = run_allgather("", R"(UCX_TLS = '^\sm')");
  EXPECT_FALSE(strict_alias.setting.starts_with("unused (")) << strict_alias.setting;
  EXPECT_GT(strict_alias.calls, 0u) << "UCX_TLS=^\\sm excludes no transport; cma runs";
  EXPECT_EQ(strict_alias.logs.find("invalid configuration"), std::string::npos) << strict_alias.logs;
}

}  // namespace
}  // namespace commbench::testing
