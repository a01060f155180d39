// workload = "data_parallel" on NCCL with memory = "cuda" (docs/workloads.md): on the simulated
// GPU this checks the plumbing — stream-ordered posts of every bucket on the backend's stream,
// test()/wait() of each request, both overlap settings, the records — never the numbers as GPU
// performance. The compute is cuBLAS SGEMMs on a compute stream (simulated libcublas.so.13: each
// GEMM a stream op lasting 2mnk / SIMGPU_GEMM_FLOPS), ordered before each post by an event.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

// What every test here needs: two GPUs (real or simulated), NCCL and its plugin.
#define REQUIRE_NCCL_ON_TWO_GPUS()                                                                           \
  REQUIRE_GPUS(2);                                                                                         \
  if (!real_gpu_mode() && !sim_library("libnccl.so.2")) GTEST_SKIP() << "simulated libnccl.so.2 not built"; \
  if (!plugin_built("nccl")) GTEST_SKIP() << "nccl plugin not built"

// workload = "data_parallel" on device memory at 2 ranks; `keys`: the model and the rest.
CommandResult run_ddp_on_gpu(const JobDir& dir, const std::string& keys, const std::string& backend = "nccl") {
  return dir.run(dir.write("w.toml", "name = \"workload-gpu\"\n[[run]]\nbackend = \"" + backend +
                                         "\"\nmemory = \"cuda\"\nworkload = \"data_parallel\"\nworld_size = 2\n" + keys),
                 {"--quiet"});
}

TEST(WorkloadOnGpu, NcclDdpWithOverlapOnAndOff) {
  REQUIRE_NCCL_ON_TWO_GPUS();
  if (!real_gpu_mode() && !sim_library("libcublas.so.13")) GTEST_SKIP() << "simulated libcublas.so.13 not built";
  JobDir dir;
  const CommandResult r = run_ddp_on_gpu(
      dir, "model = { parameters = 1048576, layers = 8 }\nbucket_size = \"1MiB\"\ncompute_ms = 4\nsteps = 3\nwarmup = 1\n");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  bool seen[2] = {false, false};
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
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

const nlohmann::json& gpu_record(const std::vector<nlohmann::json>& cases, bool overlap) {
  for (const auto& c : cases)
    if (c.contains("workload") && c["workload"]["overlap"] == overlap) return c;
  throw std::runtime_error("no workload record with that overlap");
}

// Known answer: 32 MiB of f32 gradients in 8 buckets of one layer each, 200 ms of GEMMs per step:
// 25 ms a layer, above one bucket's simulated allreduce even with both cores busy (seen: ~32 ms
// of comm a bucket with two CPU hogs failed it at 100 ms a step; 200 ms passed 5 of 5, loaded
// and quiet). Much more compute makes the compute-only step's noise rival the communication.
// Overlap off: every allreduce waits (on the device, an event) for the whole backward, so the
// communication is exposed. Overlap on: buckets 1..7 reduce while the backward of the layers
// below runs on the compute stream; only the last (1/8 of it) cannot hide. Were the posts not
// ordered after their layers' GEMMs, the collectives would run at once beside the compute and
// overlap off would expose nothing.
TEST(WorkloadOnGpu, CublasComputeOverlapsTheBucketsOnTheDevice) {
  REQUIRE_NCCL_ON_TWO_GPUS();
  if (!real_gpu_mode() && !sim_library("libcublas.so.13")) GTEST_SKIP() << "simulated libcublas.so.13 not built";
  // Up to 3 runs, until one shows the overlap. On the simulated GPU the collectives move data on
  // the CPU, so a machine busy enough (CI: a sanitizer build on both cores) can starve them until
  // nothing hides, and it did once in 2026-11-27's CI (exposed 31 of 43 ms). Load only ever hides
  // the effect; it cannot make unordered posts look overlapped, so the best of 3 stays honest.
  constexpr int kAttempts = 3;
  std::unique_ptr<JobDir> dir;
  for (int attempt = 1; attempt <= kAttempts; ++attempt) {
    dir = std::make_unique<JobDir>();
    const CommandResult r = run_ddp_on_gpu(*dir, R"(model = { parameters = 8388608, layers = 8 }
bucket_size = "4MiB"
compute_ms = 200
steps = 7
warmup = 1
)");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto cases = dir->records();
    ASSERT_EQ(cases.size(), 2u);
    for (const auto& c : cases) {
      ASSERT_EQ(c["status"], "ok") << c.dump();
      const auto& w = c["workload"];
      EXPECT_EQ(w["compute_engine"], "cublas") << w.dump();
      EXPECT_NE(w["compute_device"].get<std::string>().find("cuBLAS SGEMM"), std::string::npos) << w.dump();
      EXPECT_GT(w["compute_flops_per_s"].get<double>(), 0);
      EXPECT_EQ(w["buckets"], 8);
      // The compute-only step is the GEMMs' time (stream ops of known length), not zero. Not
      // closer than half: the GEMM count comes from the rate calibrated at start, which a loaded
      // machine understates (seen in CI: 918 of 1000 GFLOP/s, so 187 ms of GEMMs for 200).
      EXPECT_GT(w["compute_ms"]["p50"].get<double>(), 200.0 * 0.5) << w.dump();
    }
    const auto& off = gpu_record(cases, false)["workload"];
    const auto& on = gpu_record(cases, true)["workload"];
    const double off_comm = off["comm_ms"]["p50"].get<double>(), on_comm = on["comm_ms"]["p50"].get<double>();
    // Each record against its own communication time: the comm-only steps of the two records ran
    // at different moments, and on a loaded machine one was seen 2.5x the other (62 vs 157 ms),
    // so their exposed times in milliseconds are not comparable; their fractions are.
    const bool off_exposes = off["exposed_comm_ms"].get<double>() > 0.5 * off_comm;
    const bool on_hides = on["exposed_comm_ms"].get<double>() < 0.5 * on_comm;
    const bool on_better = on["overlap_efficiency"].get<double>() > off["overlap_efficiency"].get<double>();
    if (off_exposes && on_hides && on_better) break;
    if (attempt < kAttempts) {
      std::printf("attempt %d of %d showed no overlap (machine busy?), running again:\n  on  %s\n  off %s\n",
                  attempt, kAttempts, on.dump().c_str(), off.dump().c_str());
      continue;
    }
    EXPECT_TRUE(off_exposes) << off.dump();
    EXPECT_TRUE(on_hides) << on.dump();
    EXPECT_TRUE(on_better) << on.dump() << off.dump();
  }

  // The run's memory record: the model's estimate (f32 Adam: 4 + 4 + 8 bytes per parameter) and
  // what the run held on the device — the compute's three 2048² f32 matrices, then also the
  // step's send and receive buffers (32 MiB of gradients each).
  const auto mem = dir->records("memory");
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0]["workload"], "data_parallel");
  EXPECT_EQ(mem[0]["computed"]["model_state_bytes"], 16ull * 8388608);
  const auto& dev = mem[0]["measured"]["device"];
  ASSERT_TRUE(dev.is_object()) << mem[0].dump();
  EXPECT_GE(dev["buffers_bytes"].get<uint64_t>(), 3ull * 2048 * 2048 * 4) << dev.dump();
  EXPECT_GE(dev["workload_bytes"].get<uint64_t>(), dev["buffers_bytes"].get<uint64_t>() + 2ull * 32 * 1024 * 1024)
      << dev.dump();
}

// Without cuBLAS the GPU workload is not run with some other compute: both records say why.
TEST(WorkloadOnGpu, MissingCublasMakesTheCaseUnsupportedWithTheReason) {
  REQUIRE_NCCL_ON_TWO_GPUS();
  const char* before = std::getenv("COMMBENCH_CUBLAS");
  const std::string saved = before ? before : "";
  ::setenv("COMMBENCH_CUBLAS", "/nonexistent/libcublas.so.13", 1);
  JobDir dir;
  const CommandResult r = run_ddp_on_gpu(dir, R"(model = { parameters = 1048576, layers = 4 }
compute_ms = 4
steps = 2
)");
  if (before) ::setenv("COMMBENCH_CUBLAS", saved.c_str(), 1);
  else ::unsetenv("COMMBENCH_CUBLAS");
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u) << r.output;
  for (const auto& c : cases) {
    EXPECT_EQ(c["status"], "unsupported") << c.dump();
    const std::string reason = c["reason"].get<std::string>();
    EXPECT_NE(reason.find("/nonexistent/libcublas.so.13 could not be loaded"), std::string::npos) << reason;
    EXPECT_NE(reason.find("COMMBENCH_CUBLAS"), std::string::npos) << reason;
  }
}

// A host backend on memory = "cuda" (Gloo, staged: it gets host buffers) computes with cuBLAS
// too; without a stream to order, each post waits on the host for the compute event.
TEST(WorkloadOnGpu, HostBackendOnDeviceMemoryComputesWithCublas) {
  REQUIRE_GPUS(2);
  if (!real_gpu_mode() && !sim_library("libcublas.so.13")) GTEST_SKIP() << "simulated libcublas.so.13 not built";
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  JobDir dir;
  const CommandResult r = run_ddp_on_gpu(dir, "model = { parameters = 262144, layers = 4 }\ncompute_ms = 20\nsteps = 3\n", "gloo");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["workload"]["compute_engine"], "cublas") << c.dump();
    // The whole step includes the GEMMs the posts waited for (20 ms at the simulated rate).
    EXPECT_GE(c["workload"]["step_ms"]["p50"].get<double>(), 20.0 * 0.95) << c.dump();
  }
}

// FSDP posts before any compute in a step, and UCX needs test() calls to progress while the host
// waits for the GEMMs: the wait must use the current case's requests, not the previous case's
// (a step runner per case; under the sanitizer runs a stale one is a use after free).
TEST(WorkloadOnGpu, UcxFsdpOnDeviceMemoryRunsBothOverlapCases) {
  REQUIRE_GPUS(2);
  if (!real_gpu_mode() && !sim_library("libcublas.so.13")) GTEST_SKIP() << "simulated libcublas.so.13 not built";
  if (!plugin_built("ucx")) GTEST_SKIP() << "ucx plugin not built";
  JobDir dir;
  const CommandResult r = run_ddp_on_gpu(
      dir, "model = { parameters = 262144, layers = 4 }\nsharding = \"fsdp\"\ncompute_ms = 8\nsteps = 3\n", "ucx");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["workload"]["compute_engine"], "cublas") << c.dump();
    EXPECT_EQ(c["workload"]["sharding"], "fsdp") << c.dump();
  }
}

}  // namespace
}  // namespace commbench::testing
