// The CLI surface: validate, plugins, help, and side-by-side backends.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

TEST(Cli, ValidateAcceptsEveryShippedConfig) {
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(COMMBENCH_SOURCE_DIR) / "configs")) {
    if (e.path().extension() != ".toml") continue;
    const auto r = run_commbench({"validate", e.path().string()}, COMMBENCH_SOURCE_DIR);
    EXPECT_EQ(r.exit_code, 0) << e.path() << "\n" << r.output;
    EXPECT_NE(r.output.find("valid"), std::string::npos) << r.output;
  }
}

TEST(Cli, ValidateRejectsWithLocationAndExitCode2) {
  JobDir dir;
  const auto file = dir.write("bad.toml", "name = \"x\"\n[[run]]\nbackends = [\"gloo\"]\nops = [\"allreduce\"]\nsizes = [\"4KiB\"]\niteratons = 3\n");
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml:6:1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("did you mean 'iterations'"), std::string::npos) << r.output;
  // `run` validates first and runs nothing.
  const auto run = dir.run(file);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out"));
}

TEST(Cli, ValidateRejectsUnknownBackendAndUnsupportedOp) {
  JobDir dir;
  const auto file = dir.write("bad.toml", fmt::format(R"(name = "x"
plugin_path = ["{}"]
[[run]]
backends = ["gloo", "nosuch"]
ops = ["allreduce"]
sizes = ["4KiB"]
[[run]]
backends = ["crash"]
ops = ["allgather"]
sizes = ["4KiB"]
)", COMMBENCH_TEST_PLUGIN_DIR));
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.toml:4:21"), std::string::npos) << r.output;  // "nosuch"
  EXPECT_NE(r.output.find("nosuch"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bad.toml:9:8"), std::string::npos) << r.output;   // "allgather"
}

TEST(Cli, PluginsListsGlooWithAbiAndCapabilities) {
  const auto r = run_commbench({"plugins"}, COMMBENCH_SOURCE_DIR);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("gloo"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("allreduce"), std::string::npos) << r.output;
  const auto j = run_commbench({"plugins", "--json", "-P", COMMBENCH_TEST_PLUGIN_DIR}, COMMBENCH_SOURCE_DIR);
  ASSERT_EQ(j.exit_code, 0) << j.output;
  EXPECT_NE(j.output.find("\"crash\""), std::string::npos) << j.output;
  EXPECT_NE(j.output.find("\"abi_major\""), std::string::npos) << j.output;
}

TEST(Cli, EveryCommandHasHelp) {
  for (const char* cmd : {"run", "validate", "plugins"}) {
    const auto r = run_commbench({cmd, "--help"}, COMMBENCH_SOURCE_DIR);
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.output.find("Usage: commbench"), std::string::npos) << r.output;
  }
  EXPECT_EQ(run_commbench({"frobnicate"}, COMMBENCH_SOURCE_DIR).exit_code, 2);
}

TEST(Cli, WrongResultsMakeTheExitCodeNonZero) {
  // The crash plugin's `corrupt` option flips one element of every result on one rank.
  JobDir dir;
  const auto file = dir.write("wrong.toml", fmt::format(R"(name = "wrong"
plugin_path = ["{}"]
[[run]]
backends = ["crash"]
ops = ["allreduce"]
sizes = ["1KiB"]
world_size = 2
iterations = 2
[run.options.crash]
crash_rank = 1
crash_after = 1000000
corrupt = true
)", COMMBENCH_TEST_PLUGIN_DIR));
  const auto r = dir.run(file);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_GT(cases[0]["wrong"].get<int64_t>(), 0);
}

// --set replaces a key before the file is read: the same checks, errors naming the override.
TEST(Cli, SetOverridesKeysWithTheFilesValidation) {
  JobDir dir;
  const auto file = dir.write("two.toml", R"(name = "two"
[[run]]
name = "a"
backend = "gloo"
op = "allreduce"
sizes = ["4KiB"]
world_size = 2
iterations = 5
[[run]]
name = "b"
backend = "gloo"
op = "allgather"
sizes = ["4KiB"]
world_size = 2
)");
  const auto bad = dir.run(file, {"--set", "run.iterations=0"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--set run.iterations=0: error: 'iterations' must be at least 1, got 0"),
            std::string::npos) << bad.output;
  const auto typo = dir.run(file, {"--set", "run.iteratons=3"});
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.output.find("did you mean 'iterations'"), std::string::npos) << typo.output;

  // A singular key in the file is replaced by its plural override; --only keeps run "b".
  const auto ok = dir.run(file, {"--set", "run.iterations=3", "--set", "run.world_sizes=[1, 2]",
                                 "--only", "b", "--quiet"});
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    EXPECT_EQ(c["run"], "b");
    EXPECT_EQ(c["iterations"], 3);
  }
  EXPECT_EQ(cases[0]["world_size"], 1);
  EXPECT_EQ(cases[1]["world_size"], 2);
  const auto unknown = dir.run(file, {"--only", "c"});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("the file has: a, b"), std::string::npos) << unknown.output;
}

}  // namespace
}  // namespace commbench::testing
