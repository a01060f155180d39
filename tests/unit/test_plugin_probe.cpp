#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "plugin/probe.h"
#include "test_plugin_helpers.h"

namespace commbench {
namespace {

using namespace std::chrono_literals;
using test::contains;
using test::TempDir;

// A stand-in for `commbench` whose `__probe` answer is a shell script, to test the parent side.
std::string fake_probe_exe(const TempDir& tmp, const std::string& body) {
  return tmp.write("fake-commbench", "#!/bin/sh\n" + body + "\n", /*executable=*/true);
}

// Runs run_probe in this process with fd 1 sent to a file; returns {exit code, what it printed}.
std::pair<int, std::string> probe_in_process(const std::string& path) {
  TempDir tmp;
  std::string out_path = (tmp.path() / "stdout").string();
  std::fflush(stdout);
  int saved = ::dup(STDOUT_FILENO);
  int file = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(file, STDOUT_FILENO);
  ::close(file);
  int rc = run_probe(path);
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  std::stringstream text;
  text << std::ifstream(out_path).rdbuf();
  return {rc, text.str()};
}

std::string crash_plugin_path() {
  return std::string(test::test_plugin_dir()) + "/libcommbench_backend_crash.so";
}

// ---- the child side: run_probe
TEST(RunProbe, PrintsOneJsonObjectForAPlugin) {
  COMMBENCH_REQUIRE_TEST_PLUGINS();
  auto [rc, out] = probe_in_process(crash_plugin_path());
  EXPECT_EQ(rc, kProbeExitOk);
  ASSERT_EQ(out.find('\n'), out.size() - 1) << "exactly one line: " << out;
  PluginInfo info = plugin_info_from_json(nlohmann::json::parse(out));
  EXPECT_TRUE(info.ok()) << info.load_error;
  EXPECT_EQ(info.name, "crash");
  EXPECT_EQ(info.abi_major, 1u);
  EXPECT_EQ(info.caps.ops, CB_BIT(CB_OP_ALLREDUCE) | CB_BIT(CB_OP_BARRIER));
  EXPECT_EQ(info.caps.reduce_dtypes, CB_BIT(CB_DTYPE_F32));
}

TEST(RunProbe, ReportsALoadErrorAsJsonWithExitCode3) {
  auto [rc, out] = probe_in_process("/nonexistent/libcommbench_backend_x.so");
  EXPECT_EQ(rc, kProbeExitLoadError);
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_TRUE(contains(j.value("load_error", ""), "does not exist"));
}

TEST(RunProbe, AnswersValidJsonEvenForBytesThatAreNotUtf8) {
  auto [rc, out] = probe_in_process("/nonexistent/\xff\xfe.so");  // file names are bytes
  EXPECT_EQ(rc, kProbeExitLoadError);
  EXPECT_TRUE(nlohmann::json::accept(out)) << out;
}

// ---- the parent side: probe_plugin with stand-in probe processes
TEST(ProbePlugin, TakesTheAnswerOfTheProbeProcess) {
  TempDir tmp;
  std::string exe = fake_probe_exe(tmp, R"(test "$1" = __probe || exit 9
echo '{"name":"x","version":"2.0","abi_major":1,"capabilities":{"ops":["send","recv"]}}')");
  PluginInfo info = probe_plugin("/some/libcommbench_backend_x.so", exe);
  EXPECT_TRUE(info.ok()) << info.load_error;
  EXPECT_EQ(info.version, "2.0");
  EXPECT_EQ(info.path, "/some/libcommbench_backend_x.so");
  EXPECT_EQ(info.caps.ops, CB_BIT(CB_OP_SEND) | CB_BIT(CB_OP_RECV));
}

TEST(ProbePlugin, ALoadErrorAnswerIsKept) {
  TempDir tmp;
  std::string exe = fake_probe_exe(tmp, R"(echo '{"load_error":"libnccl.so.2: not found"}'; exit 3)");
  PluginInfo info = probe_plugin("/p.so", exe);
  EXPECT_EQ(info.load_error, "libnccl.so.2: not found");
}

TEST(ProbePlugin, ACrashingProbeBecomesALoadError) {
  TempDir tmp;
  std::string exe = fake_probe_exe(tmp, "echo 'plugin ctor: boom' >&2; kill -SEGV $$");
  PluginInfo info = probe_plugin("/p.so", exe);
  EXPECT_FALSE(info.ok());
  EXPECT_TRUE(contains(info.load_error, "killed by signal 11"));
  EXPECT_TRUE(contains(info.load_error, "plugin ctor: boom")) << "the last words are shown";
  // The file and how to run the probe alone (a probe: only the signal and commbench's binary).
  EXPECT_TRUE(contains(info.load_error, "loading plugin /p.so failed")) << info.load_error;
  EXPECT_TRUE(contains(info.load_error, exe + " __probe /p.so` runs it alone")) << info.load_error;
}

TEST(ProbePlugin, AHangingProbeIsKilledAndReported) {
  TempDir tmp;
  std::string exe = fake_probe_exe(tmp, "exec sleep 30");
  PluginInfo info = probe_plugin("/lib/libcommbench_backend_slow.so", exe, 200ms);
  EXPECT_TRUE(contains(info.load_error, "plugin 'slow' did not answer the probe within 0.2 s"));
}

TEST(DiscoverPlugins, ProbesOnlyTheBackendsItIsAskedFor) {
  TempDir tmp;
  std::string dir = tmp.mkdir("plugins");
  tmp.write("plugins/libcommbench_backend_used.so");
  tmp.write("plugins/libcommbench_backend_hangs.so");
  // The probe of "hangs" would take 30 s; "used" answers at once.
  std::string exe = fake_probe_exe(tmp, R"(case "$2" in
  *used.so) echo '{"name":"used","abi_major":1}' ;;
  *) exec sleep 30 ;;
esac)");
  const auto t0 = std::chrono::steady_clock::now();
  PluginCatalog catalog = discover_plugins({dir}, exe, std::set<std::string>{"used"}, 5000ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5000ms) << "the unused plugin was probed";
  EXPECT_TRUE(catalog.at("used").ok()) << catalog.at("used").load_error;
  ASSERT_TRUE(catalog.count("hangs")) << "still known by name, for 'did you mean'";
  EXPECT_TRUE(contains(catalog.at("hangs").load_error, "not probed"));
}

TEST(ListPlugins, ProbesInParallel) {
  TempDir tmp;
  std::string dir = tmp.mkdir("plugins");
  for (const char* n : {"a", "b", "c"}) tmp.write(std::string("plugins/libcommbench_backend_") + n + ".so");
  std::string exe = fake_probe_exe(tmp, "exec sleep 30");
  const auto t0 = std::chrono::steady_clock::now();
  PluginListing listing = list_plugins({{dir, "test"}}, exe, 1000ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2900ms) << "three 1 s timeouts one after the other";
  ASSERT_EQ(listing.plugins.size(), 3u);
  for (const char* n : {"a", "b", "c"})
    EXPECT_TRUE(contains(listing.plugins.at(n).load_error, fmt::format("plugin '{}' did not answer the probe within 1 s", n)));
}

TEST(ProbePlugin, GarbageOnStdoutIsALoadError) {
  TempDir tmp;
  PluginInfo info = probe_plugin("/p.so", fake_probe_exe(tmp, "echo hello"));
  EXPECT_TRUE(contains(info.load_error, "no valid JSON: 'hello'"));
  info = probe_plugin("/p.so", fake_probe_exe(tmp, "exit 1"));
  EXPECT_TRUE(contains(info.load_error, "exited with code 1"));
}

TEST(ListPlugins, ABrokenPluginNeverBreaksTheListing) {
  TempDir tmp;
  std::string dir = tmp.mkdir("plugins");
  tmp.write("plugins/libcommbench_backend_good.so");
  tmp.write("plugins/libcommbench_backend_bad.so");
  tmp.write("plugins/libcommbench_backend_liar.so");
  // Answers per file: good works, bad crashes, liar calls itself by another name.
  std::string exe = fake_probe_exe(tmp, R"(case "$2" in
  *good.so) echo '{"name":"good","abi_major":1}' ;;
  *liar.so) echo '{"name":"truth","abi_major":1}' ;;
  *) kill -KILL $$ ;;
esac)");
  PluginListing listing = list_plugins({{dir, "test"}}, exe);
  ASSERT_EQ(listing.plugins.size(), 3u);
  EXPECT_TRUE(listing.plugins.at("good").ok());
  EXPECT_TRUE(contains(listing.plugins.at("bad").load_error, "signal 9"));
  EXPECT_EQ(listing.plugins.at("bad").name, "bad") << "keyed and named by its file";
  EXPECT_TRUE(contains(listing.plugins.at("liar").load_error, "calls itself 'truth'"));
}

// ---- end to end: the real `commbench __probe`
TEST(DiscoverPlugins, FindsTheTestPluginsThroughTheRealProbe) {
  COMMBENCH_REQUIRE_TEST_PLUGINS();
  COMMBENCH_REQUIRE_EXE();
  PluginCatalog catalog = discover_plugins({test::test_plugin_dir()}, test::commbench_exe());
  ASSERT_TRUE(catalog.count("crash")) << "crash test plugin not found";
  ASSERT_TRUE(catalog.count("hang"));
  for (const auto& name : {"crash", "hang"}) {
    const PluginInfo& info = catalog.at(name);
    EXPECT_TRUE(info.ok()) << name << ": " << info.load_error;
    EXPECT_EQ(info.abi_major, 1u);
    EXPECT_EQ(info.caps.ops, CB_BIT(CB_OP_ALLREDUCE) | CB_BIT(CB_OP_BARRIER));
  }
}

}  // namespace
}  // namespace commbench
