// Pieces of the observability code that need no processes: SHA-256 against FIPS 180-4's test
// vectors, the per-case telemetry summary (ranges, what counts as throttling), the profilers'
// command lines.
#include <gtest/gtest.h>

#include "observe/profiler_command.h"
#include "common/sha256.h"
#include "observe/telemetry_sampler.h"

namespace commbench {
namespace {

TEST(Sha256, MatchesTheStandardsTestVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // Two blocks: the padding spills into a second one.
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TelemetryRow row(int64_t t, const char* source, const char* name, double v, const char* unit) {
  return TelemetryRow{t, source, name, v, unit};
}

TEST(TelemetrySummary, RangesPerKindAndSamplesCountedByTime) {
  const auto s = summarize_rows({row(1, "cpu0", "frequency", 2400, "MHz"), row(1, "cpu1", "frequency", 3000, "MHz"),
                                 row(1, "hwmon0/coretemp", "Package id 0", 50, "C"),
                                 row(2, "thermal_zone0/x86_pkg_temp", "temperature", 55, "C"),
                                 row(2, "gpu0", "temperature", 70, "C"), row(2, "gpu1", "temperature", 66, "C"),
                                 row(2, "gpu0", "sm_clock", 1410, "MHz"), row(2, "gpu0", "power", 300.5, "W")});
  EXPECT_EQ(s["samples"], 2);
  EXPECT_EQ(s["cpu_frequency_mhz"]["min"], 2400.0);
  EXPECT_EQ(s["cpu_frequency_mhz"]["max"], 3000.0);
  EXPECT_EQ(s["cpu_temperature_c"]["min"], 50.0);
  EXPECT_EQ(s["cpu_temperature_c"]["max"], 55.0);
  EXPECT_EQ(s["gpu_temperature_c"]["min"], 66.0);
  EXPECT_EQ(s["gpu_temperature_c"]["max"], 70.0);
  EXPECT_EQ(s["gpu_sm_clock_mhz"]["max"], 1410.0);
  EXPECT_EQ(s["gpu_power_w"]["min"], 300.5);
  EXPECT_FALSE(s.contains("cpu_throttle_events"));
  // No NVML reasons sampled: absent, not 0 ("checked, none").
  EXPECT_FALSE(s.contains("gpu_throttle_reasons")) << s.dump();
  EXPECT_EQ(s["throttled"], false);
  EXPECT_TRUE(summarize_rows({}).is_null());
}

TEST(TelemetrySummary, IdleAndApplicationClocksAreNotThrottlingPowerAndHeatAre) {
  // GpuIdle (0x1) and ApplicationsClocksSetting (0x2) are normal states.
  EXPECT_EQ(summarize_rows({row(1, "gpu0", "throttle_reasons", 0x3, "bitmask")})["throttled"], false);
  EXPECT_EQ(summarize_rows({row(1, "gpu0", "throttle_reasons", 0, "bitmask")})["gpu_throttle_reasons"], 0);
  const auto power = summarize_rows({row(1, "gpu0", "throttle_reasons", 0x1, "bitmask"),
                                     row(2, "gpu0", "throttle_reasons", 0x4, "bitmask")});
  EXPECT_EQ(power["throttled"], true);
  EXPECT_EQ(power["gpu_throttle_reasons"], 0x5);
  // A core's throttle counter rising during the window is a CPU throttle event.
  const auto cpu = summarize_rows({row(1, "cpu0", "throttle_count", 5, "count"), row(1, "cpu1", "throttle_count", 9, "count"),
                                   row(2, "cpu0", "throttle_count", 7, "count"), row(2, "cpu1", "throttle_count", 9, "count")});
  EXPECT_EQ(cpu["cpu_throttle_events"], 2.0);
  EXPECT_EQ(cpu["throttled"], true);
}

TEST(ProfilerCommand, ToolsWrapTheWorkerAndTemplatesFillPlaceholders) {
  const std::vector<std::string> worker{"/bin/commbench", "__worker", "--rank", "2"};
  ProfilerSetting perf{"perf", "", {}};
  auto argv = profiler_argv(perf, "/job/logs/exec0-gloo-w4-rank2", 2, worker);
  ASSERT_GE(argv.size(), 6u);
  EXPECT_NE(argv[0].find("perf"), std::string::npos);
  EXPECT_EQ(std::vector<std::string>(argv.end() - 5, argv.end()),
            (std::vector<std::string>{"--", "/bin/commbench", "__worker", "--rank", "2"}));
  EXPECT_NE(std::find(argv.begin(), argv.end(), "/job/logs/exec0-gloo-w4-rank2.perf.data"), argv.end());

  ProfilerSetting tmpl{"command", "/opt/wrap 'a b' {output}.x r{rank}", {1}};
  argv = profiler_argv(tmpl, "/o", 1, worker);  // no {command}: the worker goes last
  EXPECT_EQ(argv, (std::vector<std::string>{"/opt/wrap", "a b", "/o.x", "r1", "/bin/commbench", "__worker", "--rank", "2"}));
  EXPECT_TRUE(tmpl.wraps(1));
  EXPECT_FALSE(tmpl.wraps(0));
  EXPECT_TRUE(ProfilerSetting{}.wraps(7));  // no ranks listed: all

  ProfilerSetting placed{"command", "env X=1 {command} --after", {}};
  argv = profiler_argv(placed, "/o", 0, worker);
  EXPECT_EQ(argv.back(), "--after");
  EXPECT_EQ(argv[2], "/bin/commbench");
  EXPECT_EQ(shell_quote_join({"a", "b c", "it's"}), "a 'b c' 'it'\\''s'");
}

TEST(ProfilerCommand, AMissingProgramSaysWhatToInstall) {
  const auto why = profiler_problem(ProfilerSetting{"command", "/nonexistent/tool -x", {}});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("'/nonexistent/tool' is not an executable file"), std::string::npos) << *why;
  EXPECT_FALSE(profiler_problem(ProfilerSetting{"command", "/bin/sh -c true", {}}).has_value());
  EXPECT_EQ(find_program("sh").empty(), false);
}

// A probe: ranks beyond the world and a placeholder typo validated, and then profiled nothing or
// had every rank write one literal file. Both are errors, like root and peers beyond the world.
TEST(ProfilerCommand, RanksBeyondTheWorldAndUnknownPlaceholdersAreErrors) {
  Experiment exp;
  RunSpec run;
  run.world_sizes = {2, 4};
  // perf's event group is not a placeholder: only a lowercase word in braces looks like one.
  run.profiler = ProfilerSetting{"command", "/bin/sh -c true -e {cycles,instructions} -o {ouput}.x {rank}", {3, 4}};
  exp.runs.push_back(run);
  std::vector<std::string> messages;
  for (const Diagnostic& d : check_profilers(exp)) messages.push_back(d.message);
  ASSERT_EQ(messages.size(), 2u) << ::testing::PrintToString(messages);
  EXPECT_EQ(messages[0], "profiler.ranks names rank 4, but the run's largest world size is 4: ranks count from 0");
  EXPECT_EQ(messages[1], "profiler command: '{ouput}' is not a placeholder; the ones there are {command}, {output} and {rank}");
}

}  // namespace
}  // namespace commbench
