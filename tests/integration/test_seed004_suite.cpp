// The seed 004 suite: configs/seed004_suite.toml validates, and its small twin
// (tests/data/experiments/seed004_suite_small.toml, same run kinds) runs end to end with the four
// sections of summary.json's "suite" present and consistent with results.jsonl.
#include <gtest/gtest.h>

#include <set>

#include "job_harness.h"

namespace commbench::testing {
namespace {

namespace fs = std::filesystem;

TEST(Seed004Suite, ShippedConfigValidates) {
  const CommandResult r = run_commbench(
      {"validate", (fs::path(COMMBENCH_SOURCE_DIR) / "configs/seed004_suite.toml").string()}, fs::current_path());
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(Seed004Suite, SmallVariantFillsEverySectionConsistently) {
  JobDir dir;
  const auto file = fs::path(COMMBENCH_SOURCE_DIR) / "tests/data/experiments/seed004_suite_small.toml";
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = nlohmann::json::parse(read_text(dir.job_folder() / "summary.json"));
  ASSERT_TRUE(summary.contains("suite"));
  const auto& suite = summary["suite"];
  for (const char* section : {"communication", "training", "memory", "scaling"})
    ASSERT_TRUE(suite.contains(section)) << section;

  // communication: every op case of results.jsonl, under its op.
  const auto cases = dir.records();
  size_t op_cases = 0;
  std::set<std::string> ops;
  for (const auto& c : cases) {
    if (c["op"] == "data_parallel") continue;
    ++op_cases;
    ops.insert(c["op"].get<std::string>());
  }
  size_t listed = 0;
  for (const auto& [op, entries] : suite["communication"].items()) {
    EXPECT_TRUE(ops.count(op)) << op;
    listed += entries.size();
    for (const auto& e : entries) {
      EXPECT_EQ(e["status"], "ok") << e.dump();
      EXPECT_GT(e["busbw_gbps"].get<double>(), 0.0) << e.dump();
    }
  }
  EXPECT_EQ(listed, op_cases);
  EXPECT_EQ(ops, (std::set<std::string>{"allreduce", "allgather", "reducescatter", "pingpong"}));

  // training: the data_parallel records, overlap on and off at 1 and 2 ranks.
  size_t training_cases = 0;
  for (const auto& c : cases) training_cases += c["op"] == "data_parallel";
  EXPECT_EQ(training_cases, 4u);
  EXPECT_EQ(suite["training"].size(), training_cases);

  // memory: the memory lines of results.jsonl, in order: the memory run's two batch sizes and one
  // per data_parallel execution (1 and 2 ranks).
  const auto mem = dir.records("memory");
  ASSERT_EQ(mem.size(), 4u);
  size_t from_training = 0;
  for (const auto& m : mem) from_training += m["workload"] == "data_parallel";
  EXPECT_EQ(from_training, 2u);
  ASSERT_EQ(suite["memory"].size(), mem.size());
  for (size_t i = 0; i < mem.size(); ++i) {
    EXPECT_EQ(suite["memory"][i]["batch_size"], mem[i]["batch_size"]);
    EXPECT_EQ(suite["memory"][i]["computed"], mem[i]["computed"]);
  }

  // scaling: summary.json's own scaling series; collectives at 2 and 4 ranks and the training
  // run at 1 and 2 have two world sizes each.
  EXPECT_EQ(suite["scaling"], summary["scaling"]);
  EXPECT_FALSE(suite["scaling"].empty());
}

}  // namespace
}  // namespace commbench::testing
