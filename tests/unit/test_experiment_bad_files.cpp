// Every file in tests/data/experiments/bad/ starts with the exact diagnostics it must produce:
//   # expect: <file>:<line>:<col>: error: <message>
// The test parses the file and compares the full list, in order, with nothing extra.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "experiment/experiment.h"

namespace commbench {
namespace {

namespace fs = std::filesystem;

const fs::path kBadDir = fs::path(COMMBENCH_TEST_DATA_DIR) / "experiments" / "bad";

std::vector<std::string> bad_files() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kBadDir))
    if (entry.path().extension() == ".toml") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> expected_diagnostics(const fs::path& file) {
  const std::string prefix = "# expect: ";
  std::vector<std::string> expected;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) expected.push_back(line.substr(prefix.size()));
  return expected;
}

class BadExperimentFile : public ::testing::TestWithParam<std::string> {};

TEST_P(BadExperimentFile, ReportsExactlyTheExpectedDiagnostics) {
  const fs::path file = kBadDir / GetParam();
  const auto expected = expected_diagnostics(file);
  ASSERT_FALSE(expected.empty()) << file << " has no '# expect: ' line";

  const ParseResult result = parse_experiment_file(file.string());
  EXPECT_FALSE(result.experiment.has_value()) << "a bad file must not produce an experiment";
  std::vector<std::string> actual;
  const std::string dir_prefix = kBadDir.string() + "/";
  for (const auto& d : result.diagnostics) {
    std::string text = d.format();
    ASSERT_EQ(text.rfind(dir_prefix, 0), 0u) << "diagnostic without the file's path: " << text;
    actual.push_back(text.substr(dir_prefix.size()));
  }
  EXPECT_EQ(actual, expected);
}

INSTANTIATE_TEST_SUITE_P(Files, BadExperimentFile, ::testing::ValuesIn(bad_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return fs::path(info.param).stem().string();
                         });

TEST(BadExperimentFiles, ThereAreAtLeastTwentyFive) { EXPECT_GE(bad_files().size(), 25u); }

// Issue 28 §12: what one file may expand into is bounded, so validating any file is bounded too
// (a 100,000-run file once took 57 s and 1.6 GB). The refusal names the first [[run]] past the
// limit, and nothing after it is read.
TEST(ExperimentBounds, MoreRunsThanAllowedAreRefusedAtTheFirstOnePast) {
  std::string text = "name = \"many\"\n";
  for (int i = 0; i < 10001; ++i)
    text += "[[run]]\nname = \"r" + std::to_string(i) + "\"\nbackend = \"gloo\"\nop = \"allreduce\"\nsizes = [\"4KiB\"]\n";
  const ParseResult r = parse_experiment_string(text, "many.toml");
  EXPECT_FALSE(r.experiment);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].format(),
            "many.toml:50002:1: error: this file has 10001 [[run]] tables; an experiment may have at most 10000: split "
            "it into several files");
}

TEST(ExperimentBounds, MoreExecutionsThanAllowedAreRefusedAtTheRunThatCrossesTheLimit) {
  std::string text = "name = \"wide\"\n";
  std::string worlds = "[1";
  for (int w = 2; w <= 100; ++w) worlds += ", " + std::to_string(w);
  worlds += "]";
  for (int i = 0; i < 101; ++i)
    text += "[[run]]\nname = \"r" + std::to_string(i) + "\"\nbackend = \"gloo\"\nop = \"barrier\"\nworld_sizes = " +
            worlds + "\n";
  const ParseResult r = parse_experiment_string(text, "wide.toml");
  EXPECT_FALSE(r.experiment);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  // At the run's longest list, the value to change (a probe: the [[run]] header).
  EXPECT_EQ(r.diagnostics[0].format().rfind("wide.toml:506:15: error: with this run the experiment expands into 10100 "
                                            "executions, more than the 10000 allowed", 0), 0u)
      << r.diagnostics[0].format();
}

TEST(ExperimentBounds, RepeatsCountAsExecutions) {
  // repeats = 2^31-1 passed the bound (it counted backends x world sizes only), and planning the
  // executions then took memory until the process aborted with bad_alloc.
  const std::string run = "name = \"r\"\n[[run]]\nbackend = \"gloo\"\nop = \"allreduce\"\nsizes = [\"4KiB\"]\n";
  ParseResult r = parse_experiment_string(run + "world_sizes = [1, 2]\nrepeats = 2147483647\n", "r.toml");
  EXPECT_FALSE(r.experiment);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].format().rfind("r.toml:7:11: error: with this run the experiment expands into 4294967294 "
                                            "executions, more than the 10000 allowed (executions are backends x world "
                                            "sizes x repeats;", 0), 0u)
      << r.diagnostics[0].format();
  EXPECT_NE(r.diagnostics[0].format().find("('repeats' here has 2147483647)"), std::string::npos)
      << r.diagnostics[0].format();
  r = parse_experiment_string(run + "world_sizes = [1, 2]\nrepeats = 5001\n", "r.toml");
  EXPECT_FALSE(r.experiment);
  r = parse_experiment_string(run + "world_sizes = [1, 2]\nrepeats = 5000\n", "r.toml");
  ASSERT_TRUE(r.experiment) << (r.diagnostics.empty() ? "" : r.diagnostics[0].format());
  EXPECT_EQ(r.experiment->runs[0].repeats, 5000);
}

}  // namespace
}  // namespace commbench
