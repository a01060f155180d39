// workload = "memory"'s settings (docs/workloads.md, "Memory"): batch_sizes and optimizer read,
// bad values positioned, keys that do nothing in a run warned about.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "experiment/experiment.h"

namespace commbench {
namespace {

std::vector<std::string> memory_setting_messages(const ParseResult& r) {
  std::vector<std::string> out;
  for (const auto& d : r.diagnostics) out.push_back(d.format());
  return out;
}

TEST(MemorySettings, MemoryRunReadsBatchSizesAndOptimizer) {
  const ParseResult r = parse_experiment_string(R"(name = "m"
[[run]]
backend = "gloo"
workload = "memory"
model = "resnet50"
batch_sizes = [1, 4, 16]
optimizer = "momentum"
)", "m.toml");
  ASSERT_TRUE(r.experiment) << ::testing::PrintToString(memory_setting_messages(r));
  EXPECT_TRUE(r.diagnostics.empty()) << ::testing::PrintToString(memory_setting_messages(r));
  const RunSpec& run = r.experiment->runs.at(0);
  EXPECT_EQ(run.workload, WorkloadKind::Memory);
  EXPECT_EQ(run.batch_sizes, (std::vector<int>{1, 4, 16}));
  EXPECT_EQ(run.optimizer, workload::Optimizer::Momentum);
}

TEST(MemorySettings, BadValuesArePositionedErrors) {
  const ParseResult r = parse_experiment_string(R"(name = "m"
[[run]]
backend = "gloo"
workload = "memory"
model = "resnet50"
batch_sizes = [4, 0]
optimizer = "lamb"
)", "m.toml");
  EXPECT_FALSE(r.experiment);
  const auto m = memory_setting_messages(r);
  ASSERT_EQ(m.size(), 2u) << ::testing::PrintToString(m);
  EXPECT_NE(m[0].find("m.toml:6:"), std::string::npos) << m[0];
  EXPECT_NE(m[1].find("m.toml:7:"), std::string::npos) << m[1];
  EXPECT_NE(m[1].find("sgd, momentum, adam"), std::string::npos) << m[1];
}

// 2^62 parameters × 4 bytes once wrapped around to 0 bytes: a job "ok" with no memory at all.
TEST(MemorySettings, AModelTooBigToCountInBytesIsAPositionedError) {
  for (const char* model : {"{ parameters = 4611686018427387904, layers = 1 }",
                            "{ layers = [{ parameters = 281474976710656 }, { parameters = 1 }] }"}) {
    const ParseResult r = parse_experiment_string(fmt::format(R"(name = "m"
[[run]]
backend = "gloo"
workload = "memory"
model = {}
)", model), "m.toml");
    EXPECT_FALSE(r.experiment) << model;
    bool named = false;
    for (const auto& d : r.diagnostics) named |= d.format().find("m.toml:5:") != std::string::npos;
    EXPECT_TRUE(named) << model;
  }
}

TEST(MemorySettings, KeysWithoutEffectAreWarnedAbout) {
  const ParseResult ops = parse_experiment_string(R"(name = "m"
[[run]]
backend = "gloo"
op = "allreduce"
sizes = [4096]
batch_sizes = [1, 2]
)", "m.toml");
  ASSERT_TRUE(ops.experiment);
  ASSERT_EQ(ops.diagnostics.size(), 1u) << ::testing::PrintToString(memory_setting_messages(ops));
  EXPECT_NE(ops.diagnostics[0].format().find("'batch_sizes' has no effect"), std::string::npos);
  const ParseResult mem = parse_experiment_string(R"(name = "m"
[[run]]
backend = "gloo"
workload = "memory"
model = "resnet50"
steps = 3
)", "m.toml");
  ASSERT_TRUE(mem.experiment);
  ASSERT_EQ(mem.diagnostics.size(), 1u) << ::testing::PrintToString(memory_setting_messages(mem));
  EXPECT_NE(mem.diagnostics[0].format().find("runs no steps"), std::string::npos);
}

}  // namespace
}  // namespace commbench
