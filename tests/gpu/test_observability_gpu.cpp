// Issue 13 on the simulated GPU: the agent's telemetry reads NVML (the simulated libnvidia-ml.so.1
// with known values set through its SIMGPU_NVML_* knobs), the per-case summaries carry the GPU's
// temperature, clocks and throttling, metadata/rank<N>.json lists the GPUs, the idle check sees a
// busy GPU, and the thermal warm-up waits until NVML reports the target. Gloo and UCX, 4 ranks,
// memory = "cuda", every worker under perf when perf can record here.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

namespace fs = std::filesystem;

CommandResult run_with_env(const JobDir& dir, const fs::path& file, const std::string& env) {
  return run_shell(fmt::format("cd {} && env {} {} run {} -o out --quiet", shell_quote(dir.path().string()), env,
                               shell_quote(commbench_bin()), shell_quote(file.string())));
}

bool perf_can_record() {
  return run_shell("perf record -q -o /tmp/commbench-perf-probe-gpu.data -- true && rm -f "
                   "/tmp/commbench-perf-probe-gpu.data").exit_code == 0;
}

constexpr const char* kKnobs =
    "SIMGPU_DEVICE_COUNT=4 SIMGPU_NVML_TEMPERATURE=61 SIMGPU_NVML_POWER_W=123.5 SIMGPU_NVML_SM_CLOCK=1410 "
    "SIMGPU_NVML_MEMORY_CLOCK=1593 SIMGPU_NVML_THROTTLE_REASONS=32 SIMGPU_NVML_UTILIZATION=40 "
    "SIMGPU_NVML_MEMORY_UTILIZATION=7";

TEST(GpuObservability, TelemetryAndMetadataFromNvmlOnGlooAndUcxAtFourRanks) {
  REQUIRE_SIMULATION();
  REQUIRE_GPUS(4);
  if (!plugin_built("gloo") || !plugin_built("ucx")) GTEST_SKIP() << "gloo and ucx plugins needed";
  const bool perf = perf_can_record();
  JobDir dir;
  const auto file = dir.write("gpu_observe.toml", fmt::format(R"(
name = "gpu_observe"
[[run]]
backends = ["gloo", "ucx"]
memory = "cuda"
world_size = 4
ops = ["allreduce"]
sizes = ["4KiB", "64KiB"]
iterations = 10
telemetry = "50ms"
{}
)", perf ? "profiler = \"perf\"" : ""));
  const CommandResult r = run_with_env(dir, file, kKnobs);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path job = dir.job_folder();

  // NVML rows for every simulated GPU with the knobs' values.
  std::map<std::string, std::set<std::string>> seen;
  std::istringstream csv(read_text(job / "telemetry.csv"));
  std::string line;
  std::getline(csv, line);
  EXPECT_EQ(line, "time_unix_ns,host,source,name,value,unit");
  while (std::getline(csv, line)) {
    std::vector<std::string> c;
    std::istringstream l(line);
    for (std::string cell; std::getline(l, cell, ',');) c.push_back(cell);
    if (!line.empty() && line.back() == ',') c.emplace_back();  // an empty last field (no unit)
    ASSERT_EQ(c.size(), 6u) << line;
    seen[c[2] + "|" + c[3] + "|" + c[5]].insert(c[4]);
  }
  for (int g = 0; g < 4; ++g) {
    const std::string src = fmt::format("gpu{}", g);
    EXPECT_EQ(seen[src + "|temperature|C"], std::set<std::string>{"61"}) << src;
    EXPECT_EQ(seen[src + "|power|W"], std::set<std::string>{"123.5"}) << src;
    EXPECT_EQ(seen[src + "|sm_clock|MHz"], std::set<std::string>{"1410"}) << src;
    EXPECT_EQ(seen[src + "|memory_clock|MHz"], std::set<std::string>{"1593"}) << src;
    EXPECT_EQ(seen[src + "|throttle_reasons|bitmask"], std::set<std::string>{"32"}) << src;
    EXPECT_EQ(seen[src + "|utilization|%"], std::set<std::string>{"40"}) << src;
    EXPECT_EQ(seen[src + "|memory_utilization|%"], std::set<std::string>{"7"}) << src;
  }
  EXPECT_TRUE(seen["gpu4|temperature|C"].empty()) << "SIMGPU_DEVICE_COUNT=4";

  // Per case: GPU ranges and the thermal throttle (0x20, SwThermalSlowdown) seen.
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 4u);
  for (const auto& c : cases) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    const auto& t = c["telemetry"];
    EXPECT_EQ(t["gpu_temperature_c"]["min"], 61.0) << c.dump();
    EXPECT_EQ(t["gpu_temperature_c"]["max"], 61.0);
    EXPECT_EQ(t["gpu_sm_clock_mhz"]["max"], 1410.0);
    EXPECT_EQ(t["gpu_power_w"]["min"], 123.5);
    EXPECT_EQ(t["gpu_throttle_reasons"], 32);
    EXPECT_EQ(t["throttled"], true);
  }
  const std::string md = read_text(job / "summary.md");
  EXPECT_NE(md.find("## Observability"), std::string::npos) << md;
  EXPECT_NE(md.find("**yes** ⚠ (GPU reasons 0x20"), std::string::npos) << md;

  // The idle check saw the GPUs busy (40% utilisation) and said so.
  EXPECT_NE(r.output.find("GPU 0 is busy: 40% utilisation before the run"), std::string::npos) << r.output;
  const auto summary = nlohmann::json::parse(read_text(job / "summary.json"));
  int gpu_warnings = 0;  // (a loaded CI machine may add a CPU warning)
  for (const auto& w : summary["observability"]["idle_checks"][0]["warnings"])
    gpu_warnings += w.get<std::string>().rfind("GPU ", 0) == 0;
  EXPECT_EQ(gpu_warnings, 4);
  EXPECT_EQ(summary["observability"]["telemetry"]["sources"]["nvml"], 4);

  // Metadata per rank: the GPUs of the host from NVML, the rank's own device from the worker.
  for (int rank = 0; rank < 4; ++rank) {
    const auto m = nlohmann::json::parse(read_text(job / "metadata" / fmt::format("rank{}.json", rank)));
    const auto& gpus = m["host"]["gpus"];
    EXPECT_EQ(gpus["available"], true);
    ASSERT_EQ(gpus["devices"].size(), 4u);
    EXPECT_EQ(gpus["devices"][0]["name"], "commbench simulated GPU (not a real device)");
    EXPECT_EQ(gpus["cuda_driver_version"], 13000);
    ASSERT_EQ(m["executions"].size(), 2u);
    for (const auto& e : m["executions"]) {
      EXPECT_TRUE(e.contains("gpu")) << e.dump();
      if (perf) {
        EXPECT_GT(fs::file_size(job / (e["profiler"]["output"].get<std::string>() + ".perf.data")), 0u);
      }
    }
  }
  EXPECT_NE(summary["observability"]["metadata"]["hardware_name"].get<std::string>().find("580.00.00-cuda13.0"),
            std::string::npos) << summary["observability"].dump(2);
}

TEST(GpuObservability, ThermalWarmupWaitsUntilNvmlReportsTheTarget) {
  REQUIRE_SIMULATION();
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin needed";
  JobDir dir;
  const auto file = dir.write("warm.toml", R"(
name = "warm"
[[run]]
backend = "gloo"
memory = "cuda"
world_size = 2
op = "allreduce"
sizes = ["4KiB"]
iterations = 3
thermal_warmup = { temperature_c = 50, timeout = "30s" }
)");
  // 30 C at the agent's first NVML call, +10 C per second: 50 C after about 2 s.
  const CommandResult r = run_with_env(dir, file, "SIMGPU_DEVICE_COUNT=2 SIMGPU_NVML_TEMPERATURE=30 "
                                                  "SIMGPU_NVML_TEMPERATURE_RISE_PER_S=10");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = nlohmann::json::parse(read_text(dir.job_folder() / "summary.json"));
  const auto& w = summary["observability"]["thermal_warmups"];
  ASSERT_EQ(w.size(), 1u) << summary["observability"].dump(2);
  EXPECT_EQ(w[0]["devices"], "gpu");
  EXPECT_EQ(w[0]["reached"], true);
  EXPECT_LT(w[0]["start_c"].get<double>(), 50.0);
  EXPECT_GE(w[0]["end_c"].get<double>(), 50.0);
  EXPECT_GT(w[0]["duration_s"].get<double>(), 0.5);
  EXPECT_LT(w[0]["duration_s"].get<double>(), 25.0);
  EXPECT_EQ(dir.records().size(), 1u);
}

TEST(GpuObservability, HardwarePlaceholderNamesTheResultsFolderAfterGpuDriverAndCuda) {
  REQUIRE_SIMULATION();
  if (!plugin_built("gloo")) GTEST_SKIP() << "gloo plugin needed";
  JobDir dir;
  const auto file = dir.write("hw.toml", R"(
name = "hw"
output_dir = "by-hardware/{hardware}"
[[run]]
backend = "gloo"
world_size = 2
op = "allreduce"
sizes = ["1KiB"]
iterations = 2
)");
  const CommandResult r = run_shell(fmt::format("cd {} && SIMGPU_DEVICE_COUNT=2 {} run {} --quiet",
                                                shell_quote(dir.path().string()), shell_quote(commbench_bin()),
                                                shell_quote(file.string())));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The simulated NVML: its device name, driver 580.00.00, CUDA driver 13000.
  const fs::path expected = dir.path() / "by-hardware" / "commbench_simulated_GPU__not_a_real_device_-580.00.00-cuda13.0";
  ASSERT_TRUE(fs::is_directory(expected)) << r.output;
  EXPECT_EQ(std::distance(fs::directory_iterator(expected), fs::directory_iterator()), 1);
}

// Issue 13's done-means on the simulated GPU: a traced run of nccl on device memory and gloo at 2
// and 4 ranks, telemetry on. The merged trace.json has every case of every execution on every
// rank, one timeline (rank 0's: a collective's timed spans overlap across ranks), the NCCL cases'
// timed iterations with their args inside their timed span, and NVML counter tracks.
TEST(GpuObservability, TracedNcclAndGlooRunMergesEveryCaseOfEveryRankWithNvmlCounters) {
  REQUIRE_SIMULATION();
  REQUIRE_GPUS(4);
  if (!plugin_built("gloo") || !plugin_built("nccl")) GTEST_SKIP() << "gloo and nccl plugins needed";
  JobDir dir;
  const auto file = dir.write("gpu_trace.toml", R"(
name = "gpu_trace"
[defaults]
trace = true
telemetry = "50ms"
world_sizes = [2, 4]
ops = ["allreduce", "broadcast"]
sizes = ["4KiB", "64KiB"]
warmup = 1
iterations = 6
[[run]]
name = "nccl"
backend = "nccl"
memory = "cuda"
[[run]]
name = "gloo"
backend = "gloo"
[[run]]
name = "nccl-p2p"
backend = "nccl"
memory = "cuda"
world_sizes = [2]
ops = ["pingpong", "bidir_bw"]
sizes = ["64KiB"]
[[run]]
name = "gloo-p2p"
backend = "gloo"
world_sizes = [2]
ops = ["pingpong", "bidir_bw"]
sizes = ["64KiB"]
)");
  const CommandResult r = run_with_env(dir, file, kKnobs);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path job = dir.job_folder();
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u * 2u * 2u * 2u + 2u * 2u);  // backends x worlds x ops x sizes, p2p
  std::map<std::pair<std::string, std::string>, double> p2p_mean_us;  // (backend, op) -> sample mean
  for (const auto& c : cases) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    if (c["op"] == "pingpong" || c["op"] == "bidir_bw")
      p2p_mean_us[{c["backend"], c["op"]}] = c["time_us"]["mean"].get<double>();
  }

  const auto trace = nlohmann::json::parse(read_text(job / "trace.json"));
  EXPECT_FALSE(trace["metadata"].contains("missing")) << trace["metadata"].dump();
  EXPECT_FALSE(trace["metadata"].contains("unaligned")) << trace["metadata"].dump();
  EXPECT_NE(trace["metadata"].value("timeline", "").find("rank 0"), std::string::npos);
  // One timed span per (backend, world, op, bytes) and rank; its iterations per the same key.
  using Key = std::tuple<std::string, int, std::string, int64_t, int>;
  std::map<Key, std::pair<double, double>> timed;
  std::map<Key, std::vector<std::tuple<int, double, double>>> iterations;
  std::set<std::string> counters;
  for (const auto& ev : trace["traceEvents"]) {
    const std::string ph = ev.value("ph", "");
    if (ph == "C") counters.insert(ev["name"].get<std::string>());
    if (ph != "X" || ev.value("cat", "") != "timed") continue;
    const auto& a = ev["args"];
    const Key k{a["backend"], a["world_size"], a["op"], a["bytes"], ev["pid"]};
    const double ts = ev["ts"], dur = ev["dur"];
    EXPECT_GE(dur, 0.0) << ev.dump();
    if (a.contains("iteration")) iterations[k].emplace_back(a["iteration"].get<int>(), ts, ts + dur);
    else timed[k] = {ts, ts + dur};
  }
  for (const std::string backend : {"nccl", "gloo"})
    for (int world : {2, 4})
      for (const std::string op : {"allreduce", "broadcast"})
        for (int64_t bytes : {4096, 65536}) {
          double latest_start = -1e300, earliest_end = 1e300;
          for (int rank = 0; rank < world; ++rank) {
            const Key k{backend, world, op, bytes, rank};
            SCOPED_TRACE(fmt::format("{} {} ranks {} {} B rank {}", backend, world, op, bytes, rank));
            ASSERT_TRUE(timed.count(k)) << "no timed span";
            const auto [start, end] = timed.at(k);
            latest_start = std::max(latest_start, start);
            earliest_end = std::min(earliest_end, end);
            // Every timed iteration, numbered 0..5, inside the case's timed span.
            const auto& its = iterations[k];
            ASSERT_EQ(its.size(), 6u);
            std::set<int> numbers;
            for (const auto& [i, s, e] : its) {
              numbers.insert(i);
              EXPECT_LE(s, e);
              EXPECT_GE(s, start - 1.0) << "iteration " << i;  // 1 µs: rounding of the µs timestamps
              EXPECT_LE(e, end + 1.0) << "iteration " << i;
            }
            EXPECT_EQ(numbers, (std::set<int>{0, 1, 2, 3, 4, 5}));
          }
          // One timeline: a collective's timed iterations cannot end on one rank before they
          // started on another (the ranks meet at its start); 2 ms for the clock estimates.
          EXPECT_LE(latest_start, earliest_end + 2000.0) << backend << " " << world << " " << op << " " << bytes;
        }
  // Point-to-point iterations are whole iterations on both ranks, not the samples (half a round
  // trip, one message of a window, nothing on the pingpong responder): each lasts, and the
  // initiator's add up to at least the samples times 2 (pingpong) or the window (bidir_bw, 64).
  for (const std::string backend : {"nccl", "gloo"})
    for (const std::string op : {"pingpong", "bidir_bw"})
      for (int rank = 0; rank < 2; ++rank) {
        SCOPED_TRACE(fmt::format("{} {} rank {}", backend, op, rank));
        const Key k{backend, 2, op, 65536, rank};
        ASSERT_TRUE(timed.count(k));
        const auto& its = iterations[k];
        ASSERT_EQ(its.size(), 6u);
        double sum = 0;
        for (const auto& [i, s, e] : its) {
          EXPECT_GT(e - s, 0.0) << "iteration " << i;
          EXPECT_GE(s, timed.at(k).first - 1.0);
          EXPECT_LE(e, timed.at(k).second + 1.0);
          sum += e - s;
        }
        if (rank == 0)
          EXPECT_GE(sum, 0.95 * 6 * p2p_mean_us.at({backend, op}) * (op == "pingpong" ? 2 : 64));
      }
  // The NCCL iterations' args say what ran where: device memory, the configuration.
  bool nccl_iteration_args = false;
  for (const auto& ev : trace["traceEvents"])
    if (ev.value("cat", "") == "timed" && ev["args"].contains("iteration") && ev["args"]["backend"] == "nccl") {
      EXPECT_EQ(ev["args"]["memory"], "cuda") << ev.dump();
      for (const char* f : {"op", "bytes", "count", "dtype", "placement", "run", "world_size", "exec", "phase"})
        EXPECT_TRUE(ev["args"].contains(f)) << f << " in " << ev.dump();
      nccl_iteration_args = true;
    }
  EXPECT_TRUE(nccl_iteration_args);
  // NVML counter tracks of the simulated GPUs.
  for (int g = 0; g < 4; ++g)
    for (const char* c : {"temperature (C)", "power (W)", "sm_clock (MHz)"})
      EXPECT_TRUE(counters.count(fmt::format("gpu{} {}", g, c))) << fmt::format("gpu{} {}", g, c);
}

}  // namespace
}  // namespace commbench::testing
