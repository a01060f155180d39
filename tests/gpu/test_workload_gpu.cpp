// workload = "data_parallel" on NCCL with memory = "cuda" (docs/workloads.md): on the simulated
// GPU this checks the plumbing — stream-ordered posts of every bucket on the backend's stream,
// test()/wait() of each request, both overlap settings, the records — never the numbers as GPU
// performance. The compute between the posts is still the CPU loop (GPU compute is not done yet).
#include <gtest/gtest.h>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

TEST(WorkloadOnGpu, NcclDdpWithOverlapOnAndOff) {
  REQUIRE_GPUS(2);
  if (!real_gpu_mode() && !sim_library("libnccl.so.2")) GTEST_SKIP() << "simulated libnccl.so.2 not built";
  if (!plugin_built("nccl")) GTEST_SKIP() << "nccl plugin not built";
  JobDir dir;
  const CommandResult r = dir.run(dir.write("w.toml", R"(name = "workload-gpu"
[[run]]
backend = "nccl"
memory = "cuda"
workload = "data_parallel"
model = { parameters = 1048576, layers = 8 }
bucket_size = "1MiB"
compute_ms = 4
steps = 3
warmup = 1
world_size = 2
)"), {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
  bool seen[2] = {false, false};
  for (const auto& c : cases) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["op"], "data_parallel");
    EXPECT_EQ(c["memory"], "cuda");
    const auto& w = c["workload"];
    seen[w["overlap"].get<bool>() ? 1 : 0] = true;
    EXPECT_EQ(w["buckets"], 4);  // 4 MiB of f32 gradients, 1 MiB buckets
    EXPECT_GT(w["comm_ms"]["p50"].get<double>(), 0);
    const double eff = w["overlap_efficiency"].get<double>();
    EXPECT_GE(eff, 0.0);
    EXPECT_LE(eff, 1.0);
  }
  EXPECT_TRUE(seen[0] && seen[1]);
}

}  // namespace
}  // namespace commbench::testing
