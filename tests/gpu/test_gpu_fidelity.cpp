// What a first run on real hardware would hit (issue 26 §2–§3), each on the simulated GPU made as
// strict as CUDA and NCCL there, and in real mode on a GPU host:
//  - ranks of one host sharing a GPU: refused as unavailable with the reason before any NCCL init,
//    unless the run says oversubscribe_gpu = true (a labelled correctness mode);
//  - the host cost per op of event-timed batches is measured and recorded;
//  - options NCCL refuses at init are refused by validate first.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

// Two ranks on one GPU: SIMGPU_DEVICE_COUNT=1 on the simulation, the one GPU of a one-GPU host.
TEST(GpuFidelity, TwoRanksOnOneGpuNeedOversubscribeGpuAndAreLabelled) {
  REQUIRE_NCCL("nccl", 1);
  if (real_gpu_mode() && visible_gpus() != 1) GTEST_SKIP() << "needs a host with exactly one GPU in real mode";
  JobDir dir;
  const std::string one_gpu = real_gpu_mode() ? "" : "SIMGPU_DEVICE_COUNT = \"1\", ";
  const auto file = dir.write("shared.toml", fmt::format(R"(
name = "shared-gpu"
[defaults]
backend = "nccl"
memory = "cuda"
world_size = 2
ops = ["allreduce", "allgather"]
sizes = ["4KiB", "1MiB"]
iterations = 3
check = true
[[run]]
name = "oversubscribed"
oversubscribe_gpu = true
env = {{ {0}NCCL_DEBUG = "WARN" }}
[[run]]
name = "pinned-to-one"
env = {{ {0}CUDA_VISIBLE_DEVICES = "0" }}
)", one_gpu));
  const CommandResult r = dir.run(file, {"--quiet"});
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 2u) << r.output;
  // Allowed: every case ran and checked, and says it is no performance number.
  EXPECT_EQ(execs[0]["status"], "ok") << execs[0].dump();
  int ok = 0;
  for (const auto& c : dir.records()) {
    if (c["run"] != "oversubscribed") continue;
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
    EXPECT_EQ(c.value("oversubscribe_gpu", false), true) << c.dump();
    ++ok;
  }
  EXPECT_EQ(ok, 4);
  // summary.md, made to be shared, says so beside the numbers (it once did not).
  const std::string md = read_text(dir.job_folder() / "summary.md");
  EXPECT_NE(md.find("## ⚠ Not GPU performance"), std::string::npos) << md;
  EXPECT_NE(md.find("4 case(s) ran with ranks sharing a GPU"), std::string::npos) << md;
  if (!real_gpu_mode()) EXPECT_NE(md.find("ran on commbench simulated GPU"), std::string::npos) << md;
  const auto& backend = execs[0]["metadata"]["ranks"]["1"]["backend"];
  EXPECT_EQ(backend.value("gpu_shared", "").rfind("yes", 0), 0u) << backend.dump();
  // Not allowed: both ranks pinned to device 0 (what a global CUDA_VISIBLE_DEVICES does) is
  // reported unavailable, naming the ranks and the way out, before NCCL could fail it.
  EXPECT_EQ(execs[1]["status"], "unavailable") << execs[1].dump();
  const std::string why = execs[1].value("reason", "");
  EXPECT_NE(why.find("ranks 0 and 1 would share one GPU"), std::string::npos) << why;
  EXPECT_NE(why.find("oversubscribe_gpu = true"), std::string::npos) << why;
  EXPECT_EQ(why.find("Duplicate GPU detected\" ("), std::string::npos) << "NCCL's own error, not ours: " << why;
}

// timing = "batch" on CUDA events records rank 0's host time to enqueue one iteration. The
// simulated NCCL costs SIMGPU_LAUNCH_COST_US per op, so the record cannot be below it; other
// methods record none.
TEST(GpuFidelity, EventTimedBatchesRecordTheHostCostPerOp) {
  REQUIRE_NCCL("nccl", 1);
  JobDir dir;
  const bool sim = !real_gpu_mode();
  const auto file = dir.write("host.toml", std::string(R"(
name = "host-cost"
[defaults]
backend = "nccl"
memory = "cuda"
world_size = 1
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 50
check = false
)") + (sim ? "env = { SIMGPU_LAUNCH_COST_US = \"200\" }\n" : "") + R"(
[[run]]
name = "batch"
[[run]]
name = "per-iteration"
method = "per_iteration"
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    if (c["run"] == "batch") {
      ASSERT_TRUE(c.contains("host_us_per_op")) << c.dump();
      EXPECT_GT(c["host_us_per_op"].get<double>(), 0.0) << c.dump();
      if (sim) EXPECT_GE(c["host_us_per_op"].get<double>(), 200.0) << c.dump();
    } else {
      EXPECT_FALSE(c.contains("host_us_per_op")) << c.dump();
    }
  }
}

// NCCL refuses minCTAs / maxCTAs <= 0 when the communicator is created: validate says so first,
// at the key's line, on any machine.
TEST(GpuFidelity, ZeroCtasAreRefusedBeforeAnythingRuns) {
  if (!plugin_built("nccl")) GTEST_SKIP() << "nccl plugin not built";
  JobDir dir;
  for (const char* key : {"min_ctas", "max_ctas"}) {
    const auto file = dir.write(fmt::format("{}.toml", key), fmt::format(R"(name = "ctas"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 1
ops = ["allreduce"]
sizes = ["4KiB"]
[run.options.nccl]
{} = 0
)", key));
    const CommandResult r = run_commbench({"validate", file.string()}, dir.path());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(fmt::format("{}.toml:9:", key)), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(key), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace commbench::testing
