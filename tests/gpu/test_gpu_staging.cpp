// CUDA in the core, on the simulated GPU, with a host-memory backend (Gloo): memory = "cuda"
// stages through pinned host buffers; patterns go in and results come out by copies (the
// simulated device memory is not host-readable, so a host access by the core would crash the
// worker and fail these tests); sizes that do not fit are skipped; GPU facts and the memory
// footprint reach the metadata.
#include <gtest/gtest.h>

#include <set>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

const nlohmann::json& rank_meta(const nlohmann::json& exec, int rank) {
  return exec.at("metadata").at("ranks").at(std::to_string(rank));
}

TEST(GpuStaging, GlooAndUcxOnCudaMemoryAreStagedCheckedAndLabelled) {
  REQUIRE_GPUS(2);
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  // UCX built without CUDA support (Debian's) has host memory only: staged like Gloo.
  const std::string backends = plugin_built("ucx") ? R"(["gloo", "ucx"])" : R"(["gloo"])";
  JobDir dir;
  const auto file = dir.write("staged.toml", R"(
name = "staged"
[[run]]
backends = )" + backends + R"(
memory = "cuda"
world_size = 2
ops = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "gather", "scatter", "pingpong"]
placement = ["out_of_place", "in_place"]
dtypes = ["f32", "int64", "f16"]
sizes = ["4KiB", "256KiB"]
check = true
warmup = 1
iterations = 3
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_FALSE(cases.empty());
  int ok = 0;
  for (const auto& c : cases) {
    EXPECT_EQ(c["memory"], "cuda") << c.dump();
    if (c["backend"] == "ucx" && c["status"] == "ok" && !c.contains("staging"))
      continue;  // a UCX built with CUDA works on device memory itself: fine, not staged
    if (c["op"] == "pingpong") {
      EXPECT_EQ(c["status"], "unsupported") << c.dump();
      EXPECT_NE(c["reason"].get<std::string>().find("collectives only"), std::string::npos) << c.dump();
      continue;
    }
    if (c["status"] == "unsupported") continue;  // gloo's own gaps (dtype/op), not ours
    ASSERT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["staging"], "host_pinned") << c.dump();
    EXPECT_EQ(c["timing"], "host") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
    ++ok;
  }
  // Gloo alone: 8 ops x 3 dtypes x 2 sizes x 2 placements, less its own gaps and alltoall in place.
  EXPECT_GE(ok, 40) << "most collective cases must have run";
}

TEST(GpuStaging, SizeThatDoesNotFitInDeviceMemoryIsSkippedOnEveryRank) {
  REQUIRE_SIMULATION();
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  JobDir dir;
  const auto file = dir.write("fit.toml", R"(
name = "fit"
[[run]]
backend = "gloo"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["1MiB", "48MiB", "2MiB"]
warmup = 0
iterations = 2
env = { SIMGPU_DEVICE_MEMORY = "64MiB" }
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 3u) << r.output;
  EXPECT_EQ(cases[0]["status"], "ok") << cases[0].dump();
  EXPECT_EQ(cases[1]["status"], "skipped") << cases[1].dump();
  const std::string reason = cases[1]["reason"];
  EXPECT_NE(reason.find("does not fit"), std::string::npos) << reason;
  EXPECT_NE(reason.find("device memory"), std::string::npos) << reason;
  // The execution goes on after the skip: the next size runs.
  EXPECT_EQ(cases[2]["status"], "ok") << cases[2].dump();
}

TEST(GpuStaging, AllocationFailureIsSkippedToo) {
  REQUIRE_SIMULATION();
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  JobDir dir;
  // cudaMalloc fails from the 2nd call on (the first case's first buffer succeeds), although
  // cudaMemGetInfo says there is room: the failure itself must lead to a skip, not a crash.
  const auto file = dir.write("oom.toml", R"(
name = "oom"
[[run]]
backend = "gloo"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["1MiB"]
warmup = 0
iterations = 1
env = { SIMGPU_FAIL_MALLOC_AFTER = "1" }
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 1) << "its only case was skipped: nothing was measured\n" << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 1u) << r.output;
  EXPECT_EQ(cases[0]["status"], "skipped") << cases[0].dump();
  EXPECT_NE(cases[0]["reason"].get<std::string>().find("cudaMalloc"), std::string::npos) << cases[0].dump();
}

// The record is rank 0's: when rank 1's allocation fails, its own reason reaches the record
// (it once read only "rank 1 could not allocate this case's buffers").
TEST(GpuStaging, AnotherRanksAllocationFailureKeepsItsReason) {
  REQUIRE_SIMULATION();
  REQUIRE_NCCL("nccl", 2);
  JobDir dir;
  const auto file = dir.write("oom1.toml", R"(
name = "oom1"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB", "8KiB"]
iterations = 2
env = { SIMGPU_FAIL_MALLOC_AFTER = "4", SIMGPU_FAULT_RANK = "1" }
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  int skipped = 0;
  for (const auto& c : dir.records()) {
    if (c["status"] != "skipped") continue;
    ++skipped;
    const std::string why = c["reason"];
    EXPECT_NE(why.find("rank 1: "), std::string::npos) << why;
    EXPECT_NE(why.find("cudaMalloc"), std::string::npos) << why;
  }
  EXPECT_GE(skipped, 1) << r.output;
}

TEST(GpuStaging, MetadataCarriesTheSimulatedDeviceAndTheFootprint) {
  REQUIRE_SIMULATION();
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  JobDir dir;
  const auto file = dir.write("meta.toml", R"(
name = "meta"
[[run]]
backend = "gloo"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["1MiB", "4MiB"]
warmup = 0
iterations = 1
env = { SIMGPU_DEVICE_MEMORY = "1GiB" }
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  std::set<std::string> buses;
  for (int rank : {0, 1}) {
    const auto& m = rank_meta(execs[0], rank);
    const auto& cuda = m.at("gpu").at("cuda");
    EXPECT_EQ(cuda.at("name"), "commbench simulated GPU (not a real device)") << m.dump();
    EXPECT_EQ(cuda.at("device"), rank) << "bound by local rank";
    EXPECT_EQ(cuda.at("binding"), fmt::format("local rank {}", rank));
    EXPECT_EQ(cuda.at("total_memory_bytes"), 1ull << 30);
    buses.insert(cuda.at("pci_bus_id").get<std::string>());
    EXPECT_TRUE(m.at("gpu").contains("telemetry_start"));
    EXPECT_TRUE(m.at("gpu").contains("telemetry_end"));
    const auto& f = m.at("memory_footprint");
    EXPECT_EQ(f.at("device_total_bytes"), 1ull << 30);
    // The largest case is 4 MiB out of place: send + receive buffers on the device.
    EXPECT_GE(f.at("buffers_device_peak_bytes").get<uint64_t>(), 8ull << 20) << f.dump();
    EXPECT_LE(f.at("buffers_device_peak_bytes").get<uint64_t>(), 9ull << 20) << f.dump();
    EXPECT_GE(f.at("comm_device_bytes").get<uint64_t>(), 0u);
    EXPECT_GT(f.at("host_rss_before_init_bytes").get<uint64_t>(), 0u);
    EXPECT_GE(f.at("host_rss_after_init_bytes").get<uint64_t>(), f.at("host_rss_before_init_bytes").get<uint64_t>() / 2);
  }
  EXPECT_EQ(buses.size(), 2u) << "two ranks, two devices";
  EXPECT_TRUE(rank_meta(execs[0], 0).contains("gpu_topology")) << "local rank 0 reports the host's topology";
  EXPECT_FALSE(rank_meta(execs[0], 1).contains("gpu_topology"));
}

TEST(GpuStaging, TheRunsDeviceKeyChoosesTheGpu) {
  REQUIRE_GPUS(6);
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  JobDir dir;
  const auto file = dir.write("dev.toml", R"(
name = "device"
[[run]]
backend = "gloo"
memory = "cuda"
world_size = 1
device = 5
ops = ["allreduce"]
sizes = ["4KiB"]
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  const auto& cuda = rank_meta(execs[0], 0).at("gpu").at("cuda");
  EXPECT_EQ(cuda.at("device"), 5);
  EXPECT_EQ(cuda.at("binding"), "option device = 5");
  EXPECT_EQ(dir.records()[0]["status"], "ok");
}

TEST(GpuStaging, NvmlFactsReachTheMetadata) {
  REQUIRE_SIMULATION();
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  if (!sim_library("libnvidia-ml.so.1")) GTEST_SKIP() << "simulated libnvidia-ml.so.1 not built yet";
  JobDir dir;
  const auto file = dir.write("nvml.toml", R"(
name = "nvml"
[[run]]
backend = "gloo"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
warmup = 0
iterations = 1
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  for (int rank : {0, 1}) {
    const auto& gpu = rank_meta(execs[0], rank).at("gpu");
    const auto& nvml = gpu.at("nvml");
    ASSERT_EQ(nvml.at("available"), true) << nvml.dump();
    EXPECT_EQ(nvml.at("name"), gpu.at("cuda").at("name")) << nvml.dump();
    EXPECT_EQ(nvml.at("pci_bus_id"), gpu.at("cuda").at("pci_bus_id"));
    EXPECT_EQ(nvml.at("uuid").get<std::string>().rfind("GPU-", 0), 0u) << nvml.dump();
    EXPECT_TRUE(nvml.contains("driver_version")) << nvml.dump();
    for (const char* when : {"telemetry_start", "telemetry_end"}) {
      const auto& t = gpu.at(when);
      EXPECT_TRUE(t.contains("temperature_c") && t.contains("power_w") && t.contains("sm_clock_mhz")) << t.dump();
    }
  }
  const auto& topo = rank_meta(execs[0], 0).at("gpu_topology");
  ASSERT_TRUE(topo.contains("gpus")) << topo.dump();
  const size_t n = topo.at("gpus").size();
  EXPECT_GE(n, 2u);
  EXPECT_EQ(topo.at("pairs").size(), n * (n - 1) / 2) << topo.dump();
}

TEST(GpuStaging, WithoutACudaRuntimeCudaCasesAreUnsupportedWithTheReason) {
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  JobDir dir;
  const auto file = dir.write("nocuda.toml", R"(
name = "nocuda"
[[run]]
backend = "gloo"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
env = { COMMBENCH_CUDART = "/nonexistent/libcudart.so.13" }
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 1) << "its only case was unsupported: nothing was measured\n" << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0]["status"], "unsupported") << cases[0].dump();
  EXPECT_NE(cases[0]["reason"].get<std::string>().find("/nonexistent/libcudart.so.13 could not be loaded"),
            std::string::npos) << cases[0].dump();
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(rank_meta(execs[0], 0).at("gpu").at("available"), false);
}

TEST(GpuStaging, MoreRanksThanGpusMakesTheExecutionUnavailableSayingSo) {
  REQUIRE_SIMULATION();
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  JobDir dir;
  const auto file = dir.write("two_on_one.toml", R"(
name = "two-on-one"
[[run]]
backend = "gloo"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
env = { SIMGPU_DEVICE_COUNT = "1" }
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  // Like a backend that cannot run here: skipped, named; the job measured nothing, so it fails.
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "unavailable") << execs[0].dump();
  EXPECT_NE(execs[0]["reason"].get<std::string>().find("2 ranks on this host but 1 visible GPU"),
            std::string::npos) << execs[0].dump();
}

}  // namespace
}  // namespace commbench::testing
