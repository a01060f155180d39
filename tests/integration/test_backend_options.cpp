// Backend options checked before anything runs (ABI 1.2 option descriptors, issue 16 §2): with the
// real plugins, `validate` and `run` refuse a misspelt or badly typed gloo option at its line,
// a plugin without descriptors is only noted, `plugins gloo` lists the options and `conformance`
// checks the descriptor table.
#include <gtest/gtest.h>

#include <sstream>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

std::string experiment(const std::string& backend, const std::string& options) {
  return fmt::format(R"(name = "opts"
plugin_path = ["{}"]
[[run]]
backend = "{}"
op = "allreduce"
sizes = ["4KiB"]
world_size = 1
[run.options.{}]
{})",
                     COMMBENCH_TEST_PLUGIN_DIR, backend, backend, options);
}

// The line of `output` that mentions `what`, or "".
std::string line_with(const std::string& output, const std::string& what) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.find(what) != std::string::npos) return line;
  return "";
}

// Whether a diagnostic line is located at `where` ("file.toml:9:1:", after the file's directory).
bool located_at(const std::string& line, const std::string& where) {
  return line.rfind(where, 0) == 0 || line.find("/" + where) != std::string::npos;
}

TEST(BackendOptions, ValidateRefusesAMisspeltGlooOptionAtItsLineWithASuggestion) {
  JobDir dir;
  const auto file = dir.write("typo.toml", experiment("gloo", "timout_ms = 5000\n"));
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  const std::string error = line_with(r.output, "unknown option 'timout_ms' for backend 'gloo'");
  EXPECT_TRUE(located_at(error, "typo.toml:9:1: error:")) << r.output;  // the key's line and column
  EXPECT_NE(error.find("did you mean 'timeout_ms'?"), std::string::npos) << r.output;
  EXPECT_NE(error.find("transport, iface, hostname, allreduce_algorithm, timeout_ms"), std::string::npos) << r.output;
  // `run` validates first: nothing is launched, no job folder is written.
  const auto run = dir.run(file);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("unknown option 'timout_ms'"), std::string::npos) << run.output;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out"));
}

TEST(BackendOptions, ValidateRefusesValuesOfTheWrongType) {
  JobDir dir;
  const auto file = dir.write("types.toml", experiment("gloo", "timeout_ms = \"soon\"\nallreduce_algorithm = \"rign\"\n"));
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // Each at its value.
  EXPECT_TRUE(located_at(
      line_with(r.output, "option timeout_ms = \"soon\" for backend 'gloo' is not valid: expected a whole number from 1"),
      "types.toml:9:14: error:"))
      << r.output;
  EXPECT_TRUE(located_at(line_with(r.output, "expected one of ring, bcube, ring_chunked, halving_doubling"),
                         "types.toml:10:23: error:"))
      << r.output;
}

TEST(BackendOptions, APluginWithoutDescriptorsIsLoadedAndOnlyNoted) {
  // The sleep test plugin's table ends at 1.0's group_end: it describes no options.
  JobDir dir;
  const auto file = dir.write("old.toml", experiment("sleep", "sleep_us = 10\nnot_an_option_anywhere = 1\n"));
  const auto r = run_commbench({"validate", file.string()}, dir.path());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(located_at(line_with(r.output, "note: plugin 'sleep' does not describe its options"), "old.toml:8:"))
      << r.output;
  EXPECT_EQ(r.output.find("error"), std::string::npos) << r.output;
}

TEST(BackendOptions, PluginsNameListsTheOptions) {
  const auto r = run_commbench({"plugins", "gloo"}, COMMBENCH_SOURCE_DIR);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Options ([run.options.gloo]):"), std::string::npos) << r.output;
  EXPECT_NE(line_with(r.output, "  timeout_ms ").find("int 1..2147483647, default 300000"), std::string::npos) << r.output;
  EXPECT_NE(line_with(r.output, "  allreduce_algorithm  ").find("ring|bcube|ring_chunked|halving_doubling, default ring"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("ucx"), std::string::npos) << "only the named plugin\n" << r.output;
  const auto j = run_commbench({"plugins", "gloo", "--json"}, COMMBENCH_SOURCE_DIR);
  ASSERT_EQ(j.exit_code, 0) << j.output;
  EXPECT_NE(j.output.find("\"name\": \"timeout_ms\""), std::string::npos) << j.output;
  EXPECT_NE(j.output.find("\"type\": \"int\""), std::string::npos) << j.output;
  const auto missing = run_commbench({"plugins", "glo"}, COMMBENCH_SOURCE_DIR);
  EXPECT_EQ(missing.exit_code, 2) << missing.output;
  EXPECT_NE(missing.output.find("did you mean 'gloo'?"), std::string::npos) << missing.output;
}

TEST(BackendOptions, ConformanceChecksTheDescriptorTable) {
  JobDir dir;
  const auto gloo = run_commbench({"conformance", "gloo", "--ranks", "1"}, dir.path());
  const std::string row = line_with(gloo.output, "option descriptors");
  EXPECT_NE(row.find(" pass "), std::string::npos) << gloo.output;
  EXPECT_NE(row.find("5 option(s)"), std::string::npos) << gloo.output;
  const auto sleep = run_commbench(
      {"conformance", fmt::format("{}/libcommbench_backend_sleep.so", COMMBENCH_TEST_PLUGIN_DIR), "--ranks", "1"}, dir.path());
  EXPECT_NE(line_with(sleep.output, "option descriptors").find(" skip "), std::string::npos) << sleep.output;
}

}  // namespace
}  // namespace commbench::testing
