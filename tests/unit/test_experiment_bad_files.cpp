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

}  // namespace
}  // namespace commbench
