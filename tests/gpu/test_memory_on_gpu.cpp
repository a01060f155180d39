// workload = "memory" on device memory (NCCL, simulated GPU by default): cudaMemGetInfo after the
// allocations shows at least the computed bytes gone, and a device too small for a batch gives a
// failed record naming what did not fit — the job goes on, nothing crashes.
#include <gtest/gtest.h>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

std::string memory_run(const char* device_memory) {
  // 8 Mi parameters in f16 with Adam: 16 bytes each = 128 MiB of model state per rank;
  // activations 4 Mi elements per sample = 8 MiB.
  return fmt::format(R"(
name = "gpumem"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 2
workload = "memory"
model = {{ parameters = 8388608, layers = 8, activations = 4194304 }}
dtype = "f16"
optimizer = "adam"
batch_sizes = [1, 64]
env = {{ SIMGPU_DEVICE_MEMORY = "{}" }}
)", device_memory);
}

TEST(GpuMemory, DeviceMemoryGrowsByAtLeastTheComputedBytes) {
  REQUIRE_SIMULATION();  // sizes the device with SIMGPU_DEVICE_MEMORY
  if (!plugin_built("nccl")) GTEST_SKIP() << "nccl plugin not built";
  JobDir dir;
  const auto file = dir.write("gpumem.toml", memory_run("2GiB"));
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto mem = dir.records("memory");
  ASSERT_EQ(mem.size(), 2u) << r.output;
  for (const auto& m : mem) {
    ASSERT_EQ(m["status"], "ok") << m.dump();
    const auto& c = m["computed"];
    EXPECT_EQ(c["model_state_bytes"], 16ull * 8388608);
    const auto& d = m["measured"]["device"];
    ASSERT_TRUE(d.is_object()) << m.dump();
    EXPECT_EQ(d["total_bytes"], 2ull << 30);
    EXPECT_GE(d["buffers_bytes"].get<uint64_t>(), c["model_state_bytes"].get<uint64_t>()) << m.dump();
    EXPECT_GE(d["workload_bytes"].get<uint64_t>(), c["total_bytes"].get<uint64_t>()) << m.dump();
    EXPECT_LE(d["free_after_workload_bytes"].get<uint64_t>(), d["free_after_comm_bytes"].get<uint64_t>());
  }
}

TEST(GpuMemory, TooSmallADeviceIsAFailedRecordNotACrash) {
  REQUIRE_SIMULATION();
  if (!plugin_built("nccl")) GTEST_SKIP() << "nccl plugin not built";
  JobDir dir;
  // 256 MiB: batch 1 (128 + 8 MiB) fits; batch 64 (128 + 512 MiB of activations) does not.
  const auto file = dir.write("gpumem.toml", memory_run("256MiB"));
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 1) << "a failed measurement is a failure, not a crash\n" << r.output;
  const auto mem = dir.records("memory");
  ASSERT_EQ(mem.size(), 2u) << r.output;
  EXPECT_EQ(mem[0]["status"], "ok") << mem[0].dump();
  EXPECT_EQ(mem[1]["status"], "failed") << mem[1].dump();
  const std::string reason = mem[1]["reason"];
  EXPECT_NE(reason.find("out of device memory"), std::string::npos) << reason;
  EXPECT_NE(reason.find("activations"), std::string::npos) << reason;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "ok") << "the execution itself finished: " << execs[0].dump();
}

}  // namespace
}  // namespace commbench::testing
