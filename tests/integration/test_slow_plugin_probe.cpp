// A plugin whose load hangs (tests/plugins/probe_hang) on the plugin path: validate and run of an
// experiment that does not use it never wait for its probe; `commbench plugins` probes every
// plugin at once and names the one that did not answer (issue 17).
#include <gtest/gtest.h>

#include <filesystem>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

namespace fs = std::filesystem;

// kDefaultProbeTimeout and kListingProbeTimeout (core/src/plugin/probe.h).
constexpr double kRunProbeTimeoutS = 10;
constexpr double kListingProbeTimeoutS = 5;

std::string gloo_experiment(const std::string& plugin_dir) {
  return fmt::format(R"(name = "beside-a-hanging-plugin"
plugin_path = ["{}"]
[[run]]
backend = "gloo"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
iterations = 3
)", plugin_dir);
}

TEST(SlowPluginProbe, ValidateAndRunOfAnotherBackendDoNotWaitForIt) {
  JobDir dir;
  const auto file = dir.write("gloo.toml", gloo_experiment(COMMBENCH_PROBE_HANG_PLUGIN_DIR));
  const CommandResult v = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_LT(v.seconds, kRunProbeTimeoutS) << "validate waited for the hanging plugin's probe";
  const CommandResult r = dir.run(file, {"--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(r.seconds, kRunProbeTimeoutS) << "run waited for the hanging plugin's probe";
  ASSERT_EQ(dir.records().size(), 1u);
  // The summary lists only the plugins the job used.
  EXPECT_EQ(read_text(dir.job_folder() / "summary.json").find("probe_hang"), std::string::npos);
}

TEST(SlowPluginProbe, AnExperimentThatUsesItNamesItAndTheTimeout) {
  JobDir dir;
  const auto file = dir.write("uses.toml", fmt::format(R"(name = "uses-it"
plugin_path = ["{}"]
[[run]]
backend = "probe_hang"
world_size = 2
ops = ["allreduce"]
sizes = ["4KiB"]
)", COMMBENCH_PROBE_HANG_PLUGIN_DIR));
  const CommandResult v = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(v.exit_code, 2) << v.output;
  EXPECT_NE(v.output.find("plugin 'probe_hang' did not answer the probe within 10 s"), std::string::npos) << v.output;
}

TEST(SlowPluginProbe, PluginsProbesAllAtOnceAndNamesTheSlowOnes) {
  // Two hanging plugins: probed one after the other they would take two timeouts.
  JobDir dir;
  const fs::path plugins = dir.path() / "plugins";
  fs::create_directories(plugins);
  const fs::path so = fs::path(COMMBENCH_PROBE_HANG_PLUGIN_DIR) / "libcommbench_backend_probe_hang.so";
  fs::copy_file(so, plugins / "libcommbench_backend_probe_hang.so");
  fs::copy_file(so, plugins / "libcommbench_backend_probe_hang_too.so");
  const CommandResult r = run_commbench({"plugins", "-P", plugins.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 1) << "plugins that cannot be used make the listing fail: " << r.output;
  EXPECT_NE(r.output.find("2 plugin(s) cannot be used"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("gloo"), std::string::npos) << r.output;
  for (const char* name : {"probe_hang", "probe_hang_too"})
    EXPECT_NE(r.output.find(fmt::format("plugin '{}' did not answer the probe within 5 s", name)), std::string::npos)
        << r.output;
  EXPECT_LT(r.seconds, 2 * kListingProbeTimeoutS) << "the probes ran one after the other";
}

// Issue 28 §17: `commbench plugins NAME` probes the plugin named and no other, so a hanging
// plugin elsewhere on the path costs nothing.
TEST(SlowPluginProbe, PluginsNameProbesOnlyThatPlugin) {
  const CommandResult r =
      run_commbench({"plugins", "gloo", "-P", COMMBENCH_PROBE_HANG_PLUGIN_DIR}, COMMBENCH_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gloo"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("probe_hang"), std::string::npos) << r.output;
  EXPECT_LT(r.seconds, kListingProbeTimeoutS * 0.6) << "waited for the hanging plugin's probe";
  // A name that is not there is still answered with what is, without probing anything.
  const CommandResult missing =
      run_commbench({"plugins", "glo", "-P", COMMBENCH_PROBE_HANG_PLUGIN_DIR}, COMMBENCH_SOURCE_DIR);
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("did you mean 'gloo'"), std::string::npos) << missing.output;
  EXPECT_LT(missing.seconds, kListingProbeTimeoutS * 0.6) << missing.output;
}

}  // namespace
}  // namespace commbench::testing
