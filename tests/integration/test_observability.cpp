// Issue 13 §2-§5 through the real runner: telemetry read from a fake /sys + /proc tree
// (COMMBENCH_SYSFS_ROOT) with known values, per-case telemetry summaries, metadata/rank<N>.json,
// profilers (perf and a wrapper script) around chosen ranks' workers, the thermal warm-up and the
// idle check. On Gloo and UCX at 4 ranks.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

namespace fs = std::filesystem;

void put(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

// A host with 4 CPUs on 2 NUMA nodes, a coretemp chip, a thermal zone, RAPL, one Ethernet NIC
// (mlx5_core) and one InfiniBand HCA; every value known.
fs::path make_fake_host(const fs::path& root, const std::string& loadavg = "0.50 0.40 0.30 1/100 1234") {
  for (int c = 0; c < 4; ++c) {
    const fs::path cpu = root / fmt::format("sys/devices/system/cpu/cpu{}", c);
    put(cpu / "cpufreq/scaling_cur_freq", std::to_string(2400000 + 100000 * c));  // kHz
    put(cpu / "thermal_throttle/core_throttle_count", "5");
  }
  put(root / "sys/devices/system/cpu/online", "0-3");
  put(root / "sys/devices/system/node/node0/cpulist", "0-1");
  put(root / "sys/devices/system/node/node1/cpulist", "2-3");
  put(root / "sys/class/hwmon/hwmon0/name", "coretemp");
  put(root / "sys/class/hwmon/hwmon0/temp1_input", "45000");
  put(root / "sys/class/hwmon/hwmon0/temp1_label", "Package id 0");
  put(root / "sys/class/hwmon/hwmon0/temp2_input", "47000");
  put(root / "sys/class/thermal/thermal_zone0/type", "x86_pkg_temp");
  put(root / "sys/class/thermal/thermal_zone0/temp", "46000");
  put(root / "sys/class/powercap/intel-rapl:0/name", "package-0");
  put(root / "sys/class/powercap/intel-rapl:0/energy_uj", "1000000");
  const fs::path nic = root / "sys/class/net/eth9";
  put(nic / "statistics/rx_bytes", "1000");
  put(nic / "statistics/tx_bytes", "2000");
  put(nic / "statistics/rx_packets", "10");
  put(nic / "statistics/tx_packets", "20");
  put(nic / "speed", "25000");
  put(nic / "operstate", "up");
  put(root / "sys/bus/pci/drivers/mlx5_core/.keep", "");
  fs::create_directories(nic / "device");
  fs::create_directory_symlink("../../../../bus/pci/drivers/mlx5_core", nic / "device/driver");
  const fs::path ib = root / "sys/class/infiniband/mlx5_0";
  put(ib / "fw_ver", "28.39.1002");
  put(ib / "ports/1/state", "4: ACTIVE");
  put(ib / "ports/1/rate", "200 Gb/sec (4X HDR)");
  put(ib / "ports/1/link_layer", "InfiniBand");
  put(root / "proc/loadavg", loadavg);
  put(root / "proc/stat", "cpu  100 0 100 800 0 0 0 0 0 0");
  put(root / "proc/meminfo", "MemTotal:       16384 kB");
  put(root / "proc/cpuinfo", "processor\t: 0\nmodel name\t: Fake CPU 9000");
  put(root / "proc/sys/kernel/osrelease", "6.1.0-fake");
  put(root / "etc/os-release", "NAME=\"Fake\"\nPRETTY_NAME=\"Fake Linux 1\"");
  put(root / "proc/sys/net/ipv4/tcp_rmem", "4096\t131072\t6291456");
  put(root / "proc/sys/net/ipv4/tcp_wmem", "4096 16384 4x");  // not three numbers: left out
  return root;
}

CommandResult run_with_env(const JobDir& dir, const fs::path& file, const std::string& env) {
  return run_shell(fmt::format("cd {} && env {} {} run {} -o out --quiet", shell_quote(dir.path().string()), env,
                               COMMBENCH_BIN, shell_quote(file.string())));
}


// Whether `perf record` works here (it needs perf_event_open, which containers may forbid).
bool perf_can_record() {
  static const bool ok = run_shell("perf record -q -o /tmp/commbench-perf-probe.data -- true && rm -f "
                                   "/tmp/commbench-perf-probe.data").exit_code == 0;
  return ok;
}

TEST(Observability, TelemetryMetadataAndPerfOnGlooAndUcxAtFourRanks) {
  REQUIRE_PLUGINS("gloo", "ucx");
  if (!perf_can_record()) GTEST_SKIP() << "perf record does not work here (linux-perf missing or perf_event_open denied); "
                                          "the wrapper mechanism is tested by ProfilerTemplateWrapsOnlyTheChosenRanks";
  JobDir dir;
  const fs::path root = make_fake_host(dir.path() / "fakeroot");
  const auto file = dir.write("observe.toml", R"(
name = "observe"
[defaults]
telemetry = "50ms"
profiler = "perf"
trace = true
world_size = 4
ops = ["allreduce", "broadcast"]
sizes = ["4KiB", "64KiB"]
iterations = 20
env = { NCCL_FAKE_SETTING = "from-the-file" }
[[run]]
name = "both"
backends = ["gloo", "ucx"]
)");
  const CommandResult r = run_with_env(dir, file, "COMMBENCH_SYSFS_ROOT=" + shell_quote(root.string()) +
                                                      " UCX_FAKE_FROM_ENV=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path job = dir.job_folder();

  // telemetry.csv: the exact header, the fake tree's values in their units.
  const auto rows = csv_rows(job / "telemetry.csv");
  ASSERT_GT(rows.size(), 10u);
  EXPECT_EQ(read_text(job / "telemetry.csv").substr(0, 40), "time_unix_ns,host,source,name,value,unit");
  std::map<std::string, std::set<std::string>> seen;  // "source|name|unit" -> values
  std::set<std::string> times;
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 6u) << i;
    seen[rows[i][2] + "|" + rows[i][3] + "|" + rows[i][5]].insert(rows[i][4]);
    times.insert(rows[i][0]);
  }
  EXPECT_EQ(seen["cpu0|frequency|MHz"], std::set<std::string>{"2400"});
  EXPECT_EQ(seen["cpu3|frequency|MHz"], std::set<std::string>{"2700"});
  EXPECT_EQ(seen["cpu1|throttle_count|count"], std::set<std::string>{"5"});
  EXPECT_EQ(seen["hwmon0/coretemp|Package id 0|C"], std::set<std::string>{"45"});
  EXPECT_EQ(seen["hwmon0/coretemp|temp2|C"], std::set<std::string>{"47"});
  EXPECT_EQ(seen["thermal_zone0/x86_pkg_temp|temperature|C"], std::set<std::string>{"46"});
  EXPECT_EQ(seen["net/eth9|rx_bytes|B"], std::set<std::string>{"1000"});
  EXPECT_EQ(seen["net/eth9|tx_packets|packets"], std::set<std::string>{"20"});
  EXPECT_EQ(seen["host|load1|"], std::set<std::string>{"0.5"});
  // The energy counter does not move in the fake tree: 0 W from the second sample on.
  EXPECT_EQ(seen["powercap/package-0|power|W"], std::set<std::string>{"0"});
  EXPECT_GE(times.size(), 2u);

  // Per case: the temperature and clock ranges of the fake host, no throttling.
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u * 2u * 2u);
  for (const auto& c : cases) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    ASSERT_TRUE(c.contains("telemetry")) << c.dump();
    const auto& t = c["telemetry"];
    EXPECT_GE(t["samples"].get<int>(), 1);
    EXPECT_EQ(t["cpu_temperature_c"]["min"], 45.0);
    EXPECT_EQ(t["cpu_temperature_c"]["max"], 47.0);
    EXPECT_EQ(t["cpu_frequency_mhz"]["min"], 2400.0);
    EXPECT_EQ(t["cpu_frequency_mhz"]["max"], 2700.0);
    EXPECT_EQ(t["cpu_throttle_events"], 0.0);
    EXPECT_EQ(t["throttled"], false);
  }

  // summary.json: missing sources listed once (no NVML here), the host digest, the idle check.
  const auto summary = nlohmann::json::parse(read_text(job / "summary.json"));
  const auto& obs = summary["observability"];
  int nvml_missing = 0;
  for (const auto& m : obs["telemetry"]["missing"]) nvml_missing += m.get<std::string>().rfind("nvml:", 0) == 0;
  EXPECT_EQ(nvml_missing, 1) << obs.dump(2);
  size_t printed = 0;
  for (size_t pos = 0; (pos = r.output.find("telemetry source missing (not fatal): nvml", pos)) != std::string::npos; ++pos) ++printed;
  EXPECT_EQ(printed, 1u) << r.output;
  EXPECT_EQ(obs["telemetry"]["sources"]["cpufreq"], 4);
  ASSERT_EQ(obs["idle_checks"].size(), 1u);
  EXPECT_EQ(obs["idle_checks"][0]["load1"], 0.5);
  EXPECT_TRUE(obs["idle_checks"][0]["warnings"].empty());
  const auto& host = obs["metadata"]["hosts"].begin().value();
  EXPECT_EQ(host["cpu_model"], "Fake CPU 9000");
  EXPECT_EQ(host["numa_nodes"], 2);

  // metadata/rank<N>.json: host facts from the tree, the rank's binding, env by prefix, hashes.
  const std::string sha = run_shell("sha256sum " + shell_quote(file.string())).output.substr(0, 64);
  for (int rank = 0; rank < 4; ++rank) {
    const fs::path mf = job / "metadata" / fmt::format("rank{}.json", rank);
    ASSERT_TRUE(fs::exists(mf)) << mf;
    const auto m = nlohmann::json::parse(read_text(mf));
    EXPECT_EQ(m["rank"], rank);
    EXPECT_EQ(m["host"]["kernel"], "6.1.0-fake");
    EXPECT_EQ(m["host"]["os"], "Fake Linux 1");
    EXPECT_EQ(m["host"]["logical_cpus"], 4);
    EXPECT_EQ(m["host"]["memory_bytes"], 16384ull * 1024);
    EXPECT_EQ(m["host"]["numa_nodes"][1]["cpus"], "2-3");
    EXPECT_EQ(m["host"]["nics"][0]["name"], "eth9");
    EXPECT_EQ(m["host"]["nics"][0]["speed_mbps"], 25000);
    EXPECT_TRUE(m["host"]["nics"][0]["speed_mbps"].is_number_integer()) << "whole numbers in sysfs are written as such";
    EXPECT_EQ(m["host"]["nics"][0]["driver"], "mlx5_core");
    EXPECT_EQ(m["host"]["infiniband"][0]["ports"][0]["rate"], "200 Gb/sec (4X HDR)");
    EXPECT_EQ(m["host"]["tcp_buffers"]["rmem"], nlohmann::json({4096, 131072, 6291456})) << m["host"].dump();
    EXPECT_FALSE(m["host"]["tcp_buffers"].contains("wmem")) << m["host"].dump();
    EXPECT_EQ(m["host"]["gpus"]["available"], false);
    EXPECT_EQ(m["experiment"]["sha256"], sha);
    EXPECT_FALSE(m["commbench"]["build_id"].get<std::string>().empty());
    ASSERT_EQ(m["executions"].size(), 2u);
    std::set<std::string> backends;
    for (const auto& e : m["executions"]) {
      backends.insert(e["backend"].get<std::string>());
      EXPECT_GT(e["binding"]["cpu_count"].get<int>(), 0) << e.dump();
      EXPECT_EQ(e["environment"]["NCCL_FAKE_SETTING"], "from-the-file");
      EXPECT_EQ(e["environment"]["UCX_FAKE_FROM_ENV"], "1");
      EXPECT_TRUE(e.contains("library_versions")) << e.dump();
      // perf around every rank: the exact command, its output next to the log.
      const std::string out = e["profiler"]["output"];
      EXPECT_NE(e["profiler"]["command"].get<std::string>().find("perf record"), std::string::npos);
      EXPECT_GT(fs::file_size(job / (out + ".perf.data")), 0u) << out;
      const std::string log = read_text(job / (out + ".log"));
      EXPECT_EQ(log.rfind("commbench: worker started under the profiler: ", 0), 0u) << log;
    }
    EXPECT_EQ(backends, (std::set<std::string>{"gloo", "ucx"}));
  }
  for (const auto& e : summary["executions"]) EXPECT_EQ(e["metadata"]["profiler"].size(), 4u) << e.dump();

  // The same run traced (issue 13's done-means): one merged trace with every case of both
  // backends on all 4 ranks, and the telemetry as counter tracks.
  const auto trace = nlohmann::json::parse(read_text(job / "trace.json"));
  std::set<std::string> timed;  // "backend op size rank"
  int counters = 0;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev.value("ph", "") == "C") ++counters;
    if (ev.value("ph", "") != "X" || ev.value("cat", "") != "timed" || ev["args"].contains("iteration")) continue;
    timed.insert(fmt::format("{} {} {} {}", ev["args"].value("backend", std::string("?")),
                             ev["args"]["op"].get<std::string>(), ev["args"].value("bytes", 0), ev["pid"].dump()));
  }
  EXPECT_EQ(timed.size(), 2u * 2u * 2u * 4u) << trace.dump().substr(0, 2000);
  EXPECT_GT(counters, 0);
}

TEST(Observability, ProfilerTemplateWrapsOnlyTheChosenRanks) {
  REQUIRE_PLUGINS("gloo");
  JobDir dir;
  const auto wrapper = dir.write("wrap.sh", "#!/bin/sh\n# records its arguments, then runs the worker\n"
                                            "out=$1; rank=$2; shift 2\necho \"rank=$rank $*\" > \"$out\"\nexec \"$@\"\n");
  fs::permissions(wrapper, fs::perms::owner_all);
  const auto file = dir.write("wrap.toml", fmt::format(R"(
name = "wrap"
[[run]]
backend = "gloo"
world_size = 4
op = "allreduce"
sizes = ["1KiB"]
iterations = 3
profiler = {{ command = "{} {{output}}.wrapped {{rank}} {{command}}", ranks = [1, 3] }}
)", wrapper.string()));
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path logs = dir.job_folder() / "logs";
  for (int rank = 0; rank < 4; ++rank) {
    const fs::path out = logs / fmt::format("exec0-gloo-w4-rank{}.wrapped", rank);
    if (rank == 1 || rank == 3) {
      ASSERT_TRUE(fs::exists(out)) << out;
      const std::string text = read_text(out);
      EXPECT_EQ(text.rfind(fmt::format("rank={} ", rank), 0), 0u) << text;
      EXPECT_NE(text.find("__worker --rank " + std::to_string(rank)), std::string::npos) << text;
      EXPECT_NE(text.find("--wrapped"), std::string::npos) << text;
    } else {
      EXPECT_FALSE(fs::exists(out)) << out;
    }
  }
  ASSERT_EQ(dir.records().size(), 1u);
  EXPECT_EQ(dir.records()[0]["status"], "ok");
  EXPECT_FALSE(dir.records()[0].contains("telemetry"));  // telemetry is off unless asked for
}

TEST(Observability, MissingProfilerIsAValidationErrorBeforeAnythingRuns) {
  JobDir dir;
  const auto file = dir.write("missing.toml", R"(
name = "missing"
[[run]]
backend = "gloo"
op = "allreduce"
sizes = ["1KiB"]
profiler = "/nonexistent/commbench-profiler --flag"
)");
  const CommandResult v = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(v.exit_code, 2) << v.output;
  EXPECT_NE(v.output.find("missing.toml:7:12: error: profiler '/nonexistent/commbench-profiler --flag': the program "
                          "'/nonexistent/commbench-profiler' is not an executable file"),
            std::string::npos) << v.output;
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "out")) << "nothing may run or be written";
}

TEST(Observability, ThermalWarmupRecordsWhenAndHowLongAndIdleCheckWarns) {
  REQUIRE_PLUGINS("gloo");
  JobDir dir;
  // Load average 99 on this fake host: the idle check must warn. hwmon says 45-47 C.
  const fs::path root = make_fake_host(dir.path() / "fakeroot", "99.00 50.00 20.00 1/100 1234");
  const auto file = dir.write("warm.toml", R"(
name = "warm"
[defaults]
backend = "gloo"
world_size = 2
op = "allreduce"
sizes = ["1KiB"]
iterations = 3
[[run]]
name = "fixed"
thermal_warmup = "1s"
[[run]]
name = "already_warm"
thermal_warmup = { temperature_c = 40, timeout = "5s" }
[[run]]
name = "never_reached"
thermal_warmup = { temperature_c = 90, timeout = "1s" }
)");
  const CommandResult r = run_with_env(dir, file, "COMMBENCH_SYSFS_ROOT=" + shell_quote(root.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("the CPUs are loaded: 1-minute load average 99.00"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("thermal warm-up did not reach 90 C"), std::string::npos) << r.output;
  const auto summary = nlohmann::json::parse(read_text(dir.job_folder() / "summary.json"));
  const auto& w = summary["observability"]["thermal_warmups"];
  ASSERT_EQ(w.size(), 2u) << w.dump(2);  // 45-47 C is above 40: no warm-up for "already_warm"
  EXPECT_EQ(w[0]["run"], "fixed");
  EXPECT_EQ(w[0]["reason"], "first execution");
  EXPECT_GE(w[0]["duration_s"].get<double>(), 1.0);
  EXPECT_LT(w[0]["duration_s"].get<double>(), 5.0);
  EXPECT_EQ(w[0]["devices"], "cpu");
  EXPECT_EQ(w[1]["run"], "never_reached");
  EXPECT_EQ(w[1]["reached"], false);
  EXPECT_EQ(w[1]["start_c"], 47.0);
  EXPECT_GE(w[1]["duration_s"].get<double>(), 1.0);
  EXPECT_GT(w[1]["started_unix_ns"].get<int64_t>(), w[0]["started_unix_ns"].get<int64_t>());
  ASSERT_EQ(summary["observability"]["idle_checks"].size(), 3u);  // once per run
  EXPECT_EQ(summary["observability"]["idle_checks"][0]["warnings"].size(), 1u);
  EXPECT_EQ(dir.records().size(), 3u);
}

TEST(Observability, HardwarePlaceholderWithoutGpuIsCpuOnly) {
  REQUIRE_PLUGINS("gloo");
  JobDir dir;
  const auto file = dir.write("hw.toml", R"(
name = "hw"
[[run]]
backend = "gloo"
world_size = 2
op = "allreduce"
sizes = ["1KiB"]
iterations = 2
)");
  // No NVIDIA driver in this test's environment (the simulated one is not on its library path).
  const CommandResult r = run_commbench({"run", file.string(), "-o", "by-hardware/{hardware}", "--quiet"}, dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_directory(dir.path() / "by-hardware" / "cpu-only")) << r.output;
  EXPECT_FALSE(fs::exists(dir.path() / "by-hardware" / "{hardware}"));
}

TEST(Observability, BadSettingsAreLocatedErrors) {
  JobDir dir;
  const auto file = dir.write("bad.toml", R"(
name = "bad"
[[run]]
backend = "gloo"
op = "allreduce"
sizes = ["1KiB"]
telemetry = "1ms"
thermal_warmup = { timeout = "1min" }
profiler = { tool = "gdb" }
)");
  const CommandResult v = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(v.exit_code, 2) << v.output;
  EXPECT_NE(v.output.find("bad.toml:7:13: error: 'telemetry' interval must be at least 10ms"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("bad.toml:8:18: error: 'thermal_warmup' needs exactly one of temperature_c"), std::string::npos) << v.output;
  EXPECT_NE(v.output.find("bad.toml:9:21: error: unknown profiler tool 'gdb'"), std::string::npos) << v.output;
}

}  // namespace
}  // namespace commbench::testing
