// configs/quickstart.toml end to end, at 2 and 4 ranks: every output file, every record sane.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>

#include "job_harness.h"

namespace commbench::testing {
namespace {

void run_quickstart(int world) {
  JobDir dir;
  std::string text = read_text(std::filesystem::path(COMMBENCH_SOURCE_DIR) / "configs/quickstart.toml");
  ASSERT_FALSE(text.empty());
  text = std::regex_replace(text, std::regex(R"(\bworld_sizes?\s*=\s*[^\n]*)"),
                            "world_size = " + std::to_string(world));
  const auto file = dir.write("quickstart.toml", text);
  const CommandResult r = dir.run(file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("busbw"), std::string::npos) << r.output;

  const auto cases = dir.records();
  ASSERT_FALSE(cases.empty());
  std::set<std::string> ops;
  for (const auto& c : cases) {
    ops.insert(c["op"].get<std::string>());
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["world_size"], world);
    EXPECT_EQ(c["backend"], "gloo");
    EXPECT_EQ(c["wrong"], 0) << c.dump();
    EXPECT_GT(c["time_us"]["mean"].get<double>(), 0.0);
    EXPECT_GT(c["busbw_gbps"].get<double>(), 0.0);
    EXPECT_EQ(c["samples_us"].size(), c["iterations"].get<size_t>());
    EXPECT_EQ(c["rank_mean_us"].size(), static_cast<size_t>(world));
  }
  EXPECT_EQ(ops, (std::set<std::string>{"allreduce", "allgather", "reducescatter"}));

  const auto job = dir.job_folder();
  // CSV: header + one row per case.
  std::ifstream csv(job / "results.csv");
  size_t lines = 0;
  for (std::string l; std::getline(csv, l);) ++lines;
  EXPECT_EQ(lines, cases.size() + 1);
  const auto summary = nlohmann::json::parse(read_text(job / "summary.json"));
  EXPECT_EQ(summary["results"].size(), cases.size());
  EXPECT_EQ(summary["exit_code"], 0);
  EXPECT_NE(read_text(job / "summary.md").find("allreduce"), std::string::npos);
}

TEST(Quickstart, TwoRanks) { run_quickstart(2); }
TEST(Quickstart, FourRanks) { run_quickstart(4); }

// `outputs` chooses the files (report/output_formats.cpp); results.jsonl is written whatever.
TEST(Quickstart, OutputsChooseTheFilesAndResultsJsonlIsAlwaysWritten) {
  JobDir dir;
  const auto file = dir.write("some.toml", R"(
name = "some"
outputs = ["csv"]
[[run]]
backend = "gloo"
op = "allreduce"
sizes = ["4KiB"]
iterations = 2
warmup = 0
)");
  const CommandResult r = dir.run(file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("busbw"), std::string::npos) << "console tables were not chosen:\n" << r.output;
  const auto job = dir.job_folder();
  EXPECT_EQ(dir.records().size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(job / "results.csv"));
  EXPECT_FALSE(std::filesystem::exists(job / "summary.json"));
  EXPECT_FALSE(std::filesystem::exists(job / "summary.md"));
}

TEST(Quickstart, JobFoldersAreNeverOverwritten) {
  JobDir dir;
  const auto file = dir.write("tiny.toml", R"(
name = "tiny"
[[run]]
backends = ["gloo"]
ops = ["allreduce"]
sizes = ["1KiB"]
world_size = 2
iterations = 2
warmup = 0
)");
  ASSERT_EQ(dir.run(file).exit_code, 0);
  ASSERT_EQ(dir.run(file).exit_code, 0);
  size_t folders = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path() / "out")) {
    ++folders;
    EXPECT_TRUE(std::filesystem::exists(e.path() / "results.jsonl"));
  }
  EXPECT_EQ(folders, 2u);
}

}  // namespace
}  // namespace commbench::testing
