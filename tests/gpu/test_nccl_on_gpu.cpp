// nccl and ncclx through the core on the GPU (simulated in CI, real with COMMBENCH_GPU_TESTS=real):
// every op, dtype, reduce op and placement with check = true at world sizes 1, 2 and 4 (as many
// as the host has GPUs, on real hardware); the ncclx plugin loading NCCLX by path; p2p patterns
// grouped by the core; the GPU timing methods labelled.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <vector>

#include <fmt/ranges.h>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

// The world sizes of the matrix: 1, 2 and 4, as far as the GPUs go.
std::vector<int> matrix_worlds() {
  const int gpus = real_gpu_mode() ? visible_gpus() : 4;
  std::vector<int> w;
  for (int n : {1, 2, 4})
    if (n <= gpus) w.push_back(n);
  return w;
}

// The matrix runs twice per plugin: blocking, and with the plugin's non-blocking default, where
// the simulated NCCL returns ncclInProgress and launches each op later (1 ms here instead of its
// default 20 ms, to keep ~1,500 cases quick) — the path issue 11 §6's first bug broke.
std::string matrix_toml(const std::string& backend, const std::string& options) {
  std::vector<int> p2p;
  for (int n : matrix_worlds())
    if (n >= 2) p2p.push_back(n);
  std::string text = fmt::format(R"(
name = "{0}-matrix"
[defaults]
backend = "{0}"
memory = "cuda"
env = {{ SIMGPU_NCCL_LAUNCH_DELAY_MS = "1" }}
check = true
warmup = 0
iterations = 2
timeout = "120s"
dtypes = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2"]
redops = ["sum", "prod", "min", "max", "avg"]
placement = ["out_of_place", "in_place"]
sizes = ["1KiB"]
[defaults.options.{0}]
{1}
[[run]]
name = "collectives"
world_sizes = [{2}]
ops = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall", "gather", "scatter", "barrier"]
)", backend, options, fmt::join(matrix_worlds(), ", "));
  if (!p2p.empty())
    text += fmt::format(R"(
[[run]]
name = "p2p"
world_sizes = [{}]
placement = ["out_of_place"]
window = 4
ops = ["pingpong", "unidir_bw", "bidir_bw", "sendrecv", "msg_rate"]
)", fmt::join(p2p, ", "));
  return text;
}

// Runs the matrix; every case ok (or unsupported for a documented reason) and checked.
void expect_matrix_passes(const std::string& backend, const std::string& options) {
  JobDir dir;
  const auto file = dir.write("matrix.toml", matrix_toml(backend, options));
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  const size_t worlds = matrix_worlds().size();
  ASSERT_EQ(execs.size(), worlds + (worlds - 1)) << r.output;  // collectives per world, p2p from 2 ranks
  for (const auto& e : execs) EXPECT_EQ(e["status"], "ok") << e.dump();
  std::map<std::string, int> by_status;
  int fp8_avg_refused = 0, fp8_avg_checked = 0;
  for (const auto& c : dir.records()) {
    const std::string status = c["status"];
    const bool fp8_avg = c.value("redop", "") == "avg" && c["dtype"].get<std::string>().rfind("f8", 0) == 0;
    ++by_status[status];
    if (status == "ok") {
      if (fp8_avg) ++fp8_avg_checked;
      EXPECT_EQ(c["wrong"], 0) << c.dump();
      EXPECT_EQ(c["timing"], "cuda_event") << c.dump();
      EXPECT_FALSE(c.contains("staging")) << c.dump();
      EXPECT_GT(c["time_us"]["mean"].get<double>(), 0.0) << c.dump();
    } else if (status == "unsupported" && fp8_avg && c["world_size"] == 1) {
      // NCCL has no one-rank avg for fp8 (ncclInvalidArgument, seen on an H200 with NCCL 2.28.9):
      // the plugin refuses it as unsupported before NCCL marks the communicator with an error.
      const std::string why = c["reason"];
      EXPECT_TRUE(why.find("no avg reduction for fp8") != std::string::npos ||
                  (real_gpu_mode() && why.find("compute capability") != std::string::npos)) << c.dump();
      ++fp8_avg_refused;
    } else if (real_gpu_mode() && status == "unsupported") {
      // Real GPUs may lack what the simulated sm90 has (fp8 reductions below compute capability 9.0).
      EXPECT_NE(c["reason"].get<std::string>().find("compute capability"), std::string::npos) << c.dump();
    } else {
      ADD_FAILURE() << "not ok: " << c.dump();
    }
  }
  EXPECT_GT(by_status["ok"], real_gpu_mode() ? 100 : 1000);
  EXPECT_GT(fp8_avg_refused, 0) << "the matrix has fp8 with avg at one rank: each must be refused, not failed";
  // From 2 ranks on NCCL averages fp8 (a sum pre-multiplied by 1/n in fp8): checked, not refused.
  if (matrix_worlds().size() > 1 && !real_gpu_mode()) EXPECT_GT(fp8_avg_checked, 0);
}

TEST(NcclOnGpu, EveryOpDtypeRedopAndPlacementIsCorrectAtOneTwoAndFourRanks) {
  REQUIRE_NCCL("nccl", 1);
  expect_matrix_passes("nccl", "blocking = 1");
}

TEST(NcclOnGpu, TheSameMatrixPassesOnNonBlockingCommunicators) {
  REQUIRE_NCCL("nccl", 1);
  expect_matrix_passes("nccl", "blocking = 0");
}

TEST(NcclOnGpu, NcclxLoadsTheNcclxLibraryByPathAndPassesTheSameMatrix) {
  REQUIRE_NCCL("ncclx", 1);
  if (ncclx_library().empty()) GTEST_SKIP() << "no NCCLX library (real mode: set COMMBENCH_NCCLX_LIBRARY)";
  expect_matrix_passes("ncclx", fmt::format("blocking = 0\nlibrary = \"{}\"", ncclx_library()));
}

TEST(NcclOnGpu, NcclxOnlyPathIsSeenInTheMetadata) {
  REQUIRE_SIMULATION();
  REQUIRE_NCCL("ncclx", 1);
  if (!std::filesystem::exists(sim_ncclx_library())) GTEST_SKIP() << "simulated NCCLX not built";
  JobDir dir;
  const auto file = dir.write("x.toml", fmt::format(R"(
name = "ncclx-meta"
[[run]]
backends = ["nccl", "ncclx"]
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
[run.options.ncclx]
library = "{0}"
blocking = 1
[run.options.nccl]
blocking = 1
)", sim_ncclx_library()));
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 2u);
  const auto& nccl = execs[0]["metadata"]["ranks"]["0"]["backend"];
  const auto& ncclx = execs[1]["metadata"]["ranks"]["0"]["backend"];
  EXPECT_EQ(nccl.value("ncclx", ""), "no") << nccl.dump();
  EXPECT_EQ(ncclx.value("library", ""), sim_ncclx_library()) << ncclx.dump();
  EXPECT_EQ(ncclx.value("ncclx", "").rfind("yes", 0), 0u) << ncclx.dump();
  EXPECT_EQ(execs[1]["metadata"]["ranks"]["0"]["gpu"]["cuda"]["name"],
            "commbench simulated GPU (not a real device)");
}

TEST(NcclOnGpu, NonBlockingCommunicatorsAtTwoRanks) {
  REQUIRE_NCCL("nccl", 2);
  JobDir dir;
  const auto file = dir.write("nb.toml", R"(
name = "nonblocking"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 2
ops = ["allreduce", "alltoall", "pingpong", "sendrecv"]
sizes = ["4KiB"]
check = true
timeout = "60s"
[run.options.nccl]
blocking = 0
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["metadata"]["ranks"]["0"]["backend"].value("blocking", ""),
            "no (ncclInProgress settled per call)");
  for (const auto& c : dir.records()) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << c.dump();
  }
}

TEST(NcclOnGpu, EachMethodAndClockIsLabelledInTheRecords) {
  REQUIRE_NCCL("nccl", 2);
  JobDir dir;
  const auto file = dir.write("timing.toml", R"(
name = "timing"
[defaults]
backend = "nccl"
memory = "cuda"
world_size = 2
ops = ["allreduce", "pingpong"]
sizes = ["64KiB"]
iterations = 3
[defaults.options.nccl]
blocking = 1
[[run]]
name = "batch-events"
[[run]]
name = "batch-host-sync"
gpu_timing = "host_stream_sync"
[[run]]
name = "per-iteration-events"
method = "per_iteration"
[[run]]
name = "per-iteration-host-sync"
method = "per_iteration"
gpu_timing = "host_stream_sync"
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 8u);
  for (const auto& c : cases) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["iterations"], 3) << c.dump();
    EXPECT_EQ(c["samples_us"].size(), 3u) << c.dump();
    for (const auto& s : c["samples_us"]) EXPECT_GT(s.get<double>(), 0.0) << c.dump();
    const std::string run = c["run"];
    const bool batch = run.rfind("batch", 0) == 0;
    EXPECT_EQ(c["method"], batch ? "batch" : "per_iteration") << c.dump();
    EXPECT_EQ(c["timing"], run.find("host-sync") != std::string::npos ? "host_stream_sync" : "cuda_event") << c.dump();
    // pingpong in batch reports its initiator's clock (OSU), collectives average the ranks.
    const std::string aggregation = !batch ? "slowest_per_iteration" : c["op"] == "pingpong" ? "rank0" : "avg";
    EXPECT_EQ(c["rank_aggregation"], aggregation) << c.dump();
  }
}

// timing = "graph" (nccl-tests -G): the iterations captured into one CUDA graph through the
// plugin's capturable posts (CB_CAP_GRAPH_CAPTURE), launched once; blocking and non-blocking
// communicators; p2p patterns and host-memory backends are refused with the reason.
// Also at one rank on a one-GPU host (then without pingpong, which needs two): the events between
// the captured iterations must be graph nodes (cudaEventRecordExternal), else CUDA refuses to time
// them (cudaErrorCapturedEvent), which the simulation now enforces.
TEST(NcclOnGpu, GraphModeCapturesTheIterationsAndLaunchesThemAsOne) {
  REQUIRE_NCCL("nccl", 1);
  JobDir dir;
  const bool sim = !real_gpu_mode();
  const int world = sim ? 2 : std::min(2, visible_gpus());
  const auto file = dir.write("graph.toml", fmt::format(R"(
name = "graph"
[defaults]
backend = "nccl"
memory = "cuda"
world_size = {}
ops = [{}]
sizes = ["64KiB"]
iterations = 5
method = "graph"
)", world, world > 1 ? R"("allreduce", "allgather", "pingpong")" : R"("allreduce", "allgather")") +
                                                (sim ? "env = { SIMGPU_LOG = \"1\", SIMGPU_NCCL_LAUNCH_DELAY_MS = \"1\" }\n" : "") + R"(
[[run]]
name = "blocking"
options.nccl = { blocking = 1 }
[[run]]
name = "non-blocking"
options.nccl = { blocking = 0 }
[[run]]
name = "host-clock"
ops = ["allreduce"]
gpu_timing = "host_stream_sync"
options.nccl = { blocking = 1 }
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), world > 1 ? 7u : 5u);
  for (const auto& c : cases) {
    const std::string run = c["run"];
    EXPECT_EQ(c["method"], "graph") << c.dump();
    if (c["op"] == "pingpong") {
      EXPECT_EQ(c["status"], "unsupported") << c.dump();
      EXPECT_NE(c["reason"].get<std::string>().find("captures collectives only"), std::string::npos) << c.dump();
      continue;
    }
    if (run == "host-clock") {
      EXPECT_EQ(c["status"], "unsupported") << c.dump();
      EXPECT_NE(c["reason"].get<std::string>().find("gpu_timing = \"cuda_event\""), std::string::npos) << c.dump();
      continue;
    }
    ASSERT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["timing"], "cuda_event");
    EXPECT_EQ(c["rank_aggregation"], "avg");
    EXPECT_EQ(c["wrong"], 0) << c.dump();
    // One sample per captured iteration: the events between them were recorded by the replay.
    EXPECT_EQ(c["samples_us"].size(), 5u) << c.dump();
    for (const auto& s : c["samples_us"]) EXPECT_GT(s.get<double>(), 0.0) << c.dump();
  }
  if (sim) {
    // The simulated runtime logged the capture and nothing illegal during it.
    const std::string log = read_text(dir.job_folder() / "logs" / fmt::format("exec0-nccl-w{}-rank0.log", world));
    EXPECT_NE(log.find("capture begins"), std::string::npos) << log.substr(0, 4000);
    EXPECT_EQ(log.find("capture invalidated"), std::string::npos) << log.substr(0, 4000);
  }
}

// A round larger than one graph holds (min_time, or a large `iterations`): each captured NCCL
// collective is a persistent plan, so 100,000 of them in one graph cost memory and seconds of
// instantiation. At most 1,000 per graph: the full graph is launched again, the rest captured apart.
TEST(NcclOnGpu, GraphModeRelaunchesAGraphOfAtMostAThousandIterations) {
  REQUIRE_NCCL("nccl", 1);
  JobDir dir;
  const bool sim = !real_gpu_mode();
  const auto file = dir.write("graph-big.toml", std::string(R"(
name = "graph-big"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 1
ops = ["allreduce"]
sizes = ["1KiB"]
warmup = 2
iterations = 2100
method = "graph"
)") + (sim ? "env = { SIMGPU_LOG = \"1\" }\n" : ""));
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 1u);
  ASSERT_EQ(cases[0]["status"], "ok") << cases[0].dump();
  EXPECT_EQ(cases[0]["samples_us"].size(), 2100u);
  for (const auto& s : cases[0]["samples_us"]) EXPECT_GT(s.get<double>(), 0.0);
  if (sim) {
    const std::string log = read_text(dir.job_folder() / "logs" / "exec0-nccl-w1-rank0.log");
    const auto count = [&](const std::string& what) {
      size_t n = 0;
      for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(count("capture begins"), 2u) << "a graph of 1,000 and one of the last 100";
    EXPECT_EQ(count("graph launch"), 3u);
  }
}

TEST(NcclOnGpu, GraphModeOnAStagedHostBackendIsUnsupportedWithTheReason) {
  REQUIRE_GPUS(1);
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin not built";
  JobDir dir;
  const CommandResult r = dir.run(dir.write("g.toml", R"(
name = "graph-gloo"
[[run]]
backend = "gloo"
memory = "cuda"
world_size = 1
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 2
method = "graph"
)"), {"--quiet"});
  ASSERT_EQ(r.exit_code, 1) << "its only case was unsupported: nothing was measured\n" << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0]["status"], "unsupported") << cases[0].dump();
  EXPECT_NE(cases[0]["reason"].get<std::string>().find("stream-ordered backend"), std::string::npos) << cases[0].dump();
}

TEST(NcclOnGpu, FootprintCountsTheCommunicatorsDeviceMemory) {
  REQUIRE_SIMULATION();
  REQUIRE_NCCL("nccl", 1);
  JobDir dir;
  const auto file = dir.write("fp.toml", R"(
name = "footprint"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["1MiB"]
env = { SIMGPU_NCCL_COMM_MEMORY = "24MiB" }
[run.options.nccl]
blocking = 1
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  for (const char* rank : {"0", "1"}) {
    const auto& f = execs[0]["metadata"]["ranks"][rank]["memory_footprint"];
    // The simulated communicator takes 24 MiB of device memory at its first op, as NCCL >= 2.22
    // does (runtime connection): after init only the plugin's scratch shows; once ops ran, all.
    EXPECT_LT(f.at("comm_device_bytes").get<uint64_t>(), 2ull << 20) << f.dump();
    EXPECT_GE(f.at("comm_device_bytes_after_ops").get<uint64_t>(), 24ull << 20) << f.dump();
    EXPECT_LE(f.at("comm_device_bytes_after_ops").get<uint64_t>(), 26ull << 20) << f.dump();
    EXPECT_GE(f.at("buffers_device_peak_bytes").get<uint64_t>(), 2ull << 20) << f.dump();
  }
}

// The plugin's own `device` option binds the core to the same GPU (one device for both).
TEST(NcclOnGpu, ThePluginsDeviceOptionBindsTheCoreToo) {
  REQUIRE_NCCL("nccl", 4);
  JobDir dir;
  const auto file = dir.write("dev.toml", R"(
name = "device"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 1
ops = ["allreduce"]
sizes = ["4KiB"]
[run.options.nccl]
blocking = 1
device = 3
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  const auto& m = execs[0]["metadata"]["ranks"]["0"];
  EXPECT_EQ(m["gpu"]["cuda"]["device"], 3) << m.dump();
  EXPECT_EQ(m["gpu"]["cuda"]["binding"], "option device = 3") << m.dump();
  EXPECT_EQ(m["backend"].value("device", ""), "3") << m.dump();
}

// An op that never completes on the stream: the execution fails at its timeout naming the stuck
// case, and the job ends (the worker does not wait for the stream on its way out).
TEST(NcclOnGpu, AHungOpFailsTheExecutionAtItsTimeout) {
  REQUIRE_SIMULATION();
  REQUIRE_NCCL("nccl", 1);
  JobDir dir;
  const auto file = dir.write("hang.toml", R"(
name = "hang"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
timeout = "8s"
env = { SIMGPU_HANG_AFTER = "5" }
[run.options.nccl]
blocking = 1
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_LT(r.seconds, 60) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "failed") << execs[0].dump();
  EXPECT_NE(execs[0]["reason"].get<std::string>().find("allreduce 4096 B"), std::string::npos) << execs[0].dump();
}

// NCCL reports its own failed system call as ncclSystemError, which the plugin maps to "remote"
// (a peer's socket closing reads the same). A rank failing init so, while its peer waits in
// init, once had the waiting peer blamed as "stuck" with failure_kind timeout: no peer failed,
// so the failure is the reporting rank's own.
TEST(NcclOnGpu, AnInitFailureOnOneRankBlamesThatRankNotThePeerWaitingForIt) {
  REQUIRE_SIMULATION();
  REQUIRE_NCCL("nccl", 2);
  JobDir dir;
  const auto file = dir.write("init.toml", R"(
name = "init"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
timeout = "30s"
env = { SIMGPU_FAIL_COMM_INIT = "1", SIMGPU_FAULT_RANK = "1" }
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["failed_rank"], 1) << execs[0].dump();
  EXPECT_NE(execs[0]["failure_kind"], "timeout") << execs[0].dump();
  EXPECT_NE(execs[0]["reason"].get<std::string>().find("injected init failure on rank 1"), std::string::npos)
      << execs[0].dump();
}

// Issue 11 §6 cases the simulation reproduces as NCCL 2.28 behaves: a pre-sm90 GPU refuses fp8
// reductions (reported unsupported from the compute capability, not failed), min_ctas alone is
// accepted (NCCL rejects an undefined maxCTAs below minCTAs), in-place alltoall is refused as
// undefined while fp8 data movement and out-of-place alltoall run and check.
TEST(NcclOnGpu, PreSm90Fp8MinCtasAloneAndInPlaceAlltoallAreHandled) {
  REQUIRE_SIMULATION();
  REQUIRE_NCCL("nccl", 2);
  JobDir dir;
  const auto file = dir.write("cc80.toml", R"(
name = "cc80"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 2
env = { SIMGPU_COMPUTE_CAPABILITY = "8.0" }
ops = ["allreduce", "allgather", "alltoall"]
dtypes = ["f8e4m3", "f32"]
placement = ["out_of_place", "in_place"]
sizes = ["1KiB"]
check = true
[run.options.nccl]
min_ctas = 2
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int ok = 0;
  for (const auto& c : dir.records()) {
    const std::string op = c["op"], dtype = c["dtype"], place = c["placement"], status = c["status"];
    if (op == "allreduce" && dtype == "f8e4m3") {
      EXPECT_EQ(status, "unsupported") << c.dump();
      EXPECT_NE(c.value("reason", "").find("f8e4m3"), std::string::npos) << c.dump();
    } else if (op == "alltoall" && place == "in_place") {
      EXPECT_NE(status, "ok") << c.dump();
      EXPECT_NE(c.value("reason", "").find("in-place alltoall"), std::string::npos) << c.dump();
    } else {
      EXPECT_EQ(status, "ok") << c.dump();
      EXPECT_EQ(c["wrong"], 0) << c.dump();
      ++ok;
    }
  }
  EXPECT_EQ(ok, 8) << "allreduce f32 x2, allgather x4, alltoall out of place x2";
  EXPECT_EQ(dir.records("execution")[0]["metadata"]["ranks"]["0"]["backend"].value("compute_capability", ""), "8.0");
}

}  // namespace
}  // namespace commbench::testing
