// The NCCL plugins' device buffers on the GPU (simulated in CI, real with COMMBENCH_GPU_TESTS=real):
// registration = on (ncclMemAlloc + ncclCommRegister, deregistered before the free, or declined by
// NCCL), and fp8 avg where 1/n is not an fp8 number.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace nccl_buffers_test {  // named: a unity build may put several test files in one unit

// At 3 ranks 1/3 is not an fp8 number (e4m3 rounds it to 0.34375, e5m2 to 0.3125): NCCL's
// pre-multiplied sum is off from sum/3 by more than an fp8 ulp, and the check must allow for it.
TEST(NcclOnGpu, Fp8AverageAtThreeRanksIsCheckedAgainstTheRoundedScalar) {
  REQUIRE_NCCL("nccl", 3);
  JobDir dir;
  const CommandResult r = dir.run(dir.write("fp8avg.toml", R"(
name = "fp8-avg"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 3
ops = ["allreduce", "reduce", "reducescatter"]
dtypes = ["f8e4m3", "f8e5m2"]
redops = ["avg"]
placement = ["out_of_place", "in_place"]
sizes = ["3KiB", "96KiB"]
check = true
timeout = "60s"
)"), {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 3u * 2 * 2 * 2);
  for (const auto& c : cases) {
    // Real GPUs below compute capability 9.0 refuse fp8 reductions, with the reason.
    if (real_gpu_mode() && c["status"] == "unsupported" &&
        c["reason"].get<std::string>().find("compute capability") != std::string::npos)
      continue;
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
  }
}

// registration = on: buffers come from ncclMemAlloc and are registered with the communicator
// (ncclCommRegister), each deregistered before it is freed, none left to the communicator's teardown.
TEST(NcclOnGpu, RegistrationRegistersEachBufferAndDeregistersItBeforeTheFree) {
  REQUIRE_NCCL("nccl", 2);
  JobDir dir;
  const bool sim = !real_gpu_mode();
  const CommandResult r = dir.run(dir.write("reg.toml", std::string(R"(
name = "registered"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 2
ops = ["allreduce", "alltoall", "allgather", "sendrecv"]
placement = ["out_of_place", "in_place"]
sizes = ["4KiB", "1MiB"]
check = true
timeout = "60s"
options.nccl.registration = true
)") + (sim ? "env = { SIMGPU_LOG = \"1\" }\n" : "")), {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["metadata"]["ranks"]["0"]["backend"].value("registration", ""), "on");
  size_t ok = 0;
  for (const auto& c : dir.records()) {
    if (c["op"] == "alltoall" && c["placement"] == "in_place") continue;  // NCCL has no in-place alltoall
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
    ++ok;
  }
  EXPECT_EQ(ok, 12u) << "3 collectives in 2 placements and sendrecv out of place, at 2 sizes";
  if (!sim) return;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string log = read_text(dir.job_folder() / "logs" / fmt::format("exec0-nccl-w2-rank{}.log", rank));
    const auto count = [&](const std::string& what) {
      size_t n = 0;
      for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
      return n;
    };
    EXPECT_GE(count("buffer registered"), 16u) << log.substr(0, 4000);
    EXPECT_EQ(count("buffer registered"), count("buffer deregistered")) << log.substr(0, 4000);
    EXPECT_EQ(count("registrations still held"), 0u) << log.substr(0, 4000);
    EXPECT_EQ(count("still has registered"), 0u) << "a buffer freed before it was deregistered\n" << log.substr(0, 4000);
  }
}

// NCCL may decline a registration and succeed (NCCL_LOCAL_REGISTER=0, P2P through memcpy): a null
// handle, nothing to deregister; the cases run on the allocated buffers as before.
TEST(NcclOnGpu, ADeclinedRegistrationStillRunsAndIsNotDeregistered) {
  REQUIRE_NCCL("nccl", 2);
  JobDir dir;
  const bool sim = !real_gpu_mode();
  const CommandResult r = dir.run(dir.write("declined.toml", std::string(R"(
name = "declined"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 2
ops = ["allreduce", "sendrecv"]
sizes = ["4KiB"]
check = true
timeout = "60s"
options.nccl.registration = true
)") + (sim ? "env = { NCCL_LOCAL_REGISTER = \"0\", SIMGPU_LOG = \"1\" }\n" : "env = { NCCL_LOCAL_REGISTER = \"0\" }\n")),
                                  {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
  }
  if (!sim) return;
  const std::string log = read_text(dir.job_folder() / "logs" / "exec0-nccl-w2-rank0.log");
  EXPECT_NE(log.find("registration declined"), std::string::npos) << log.substr(0, 4000);
  EXPECT_EQ(log.find("buffer registered"), std::string::npos) << log.substr(0, 4000);
  EXPECT_EQ(log.find("unknown handle"), std::string::npos) << log.substr(0, 4000);
}

}  // namespace nccl_buffers_test
}  // namespace commbench::testing
