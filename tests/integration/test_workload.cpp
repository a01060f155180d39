// workload = "data_parallel" through the real runner (docs/workloads.md). The known-answer case:
// the `sleep` test plugin in its async mode (every allreduce takes a known time on one serial
// channel, completing while the caller computes) and a fixed compute_ms. Without overlap the
// whole communication is exposed (efficiency near 0); with overlap and a backward per layer
// longer than a bucket's allreduce only the last bucket is exposed (efficiency near 1 - 1/8).
// Bounds are generous: the machine is small and shared, and compute time is measured, not assumed.
#include <gtest/gtest.h>

#include <map>

#include <filesystem>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

const nlohmann::json& by_overlap(const std::vector<nlohmann::json>& cases, bool overlap) {
  for (const auto& c : cases)
    if (c.contains("workload") && c["workload"]["overlap"] == overlap) return c;
  throw std::runtime_error("no workload record with that overlap");
}

TEST(Workload, KnownCommAndComputeGiveTheExpectedOverlapEfficiency) {
  JobDir dir;
  // 8 layers of 500,000 f32 parameters (2 MB) with a 2 MB cap: 8 buckets, one per layer, each
  // allreduce 10 ms -> 80 ms of communication. Backward per layer: 240 ms x 2/3 / 8 = 20 ms.
  const CommandResult r = dir.run(dir.write("w.toml", std::string(R"(name = "workload"
plugin_path = [")") + COMMBENCH_TEST_PLUGIN_DIR + R"("]
[[run]]
backend = "sleep"
workload = "data_parallel"
model = { parameters = 4000000, layers = 8 }
bucket_size = "2MB"
batch_size = 16
compute_ms = 240
steps = 12
warmup = 1
world_size = 1
check = false
options.sleep = { sleep_us = 10000, async = 1 }
)"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("# overlap step p50(ms)"), std::string::npos) << r.output;  // the console's table
  EXPECT_NE(read_text(dir.job_folder() / "summary.md").find("### Workload steps"), std::string::npos);
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 2u);
  for (const auto& c : cases) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["op"], "data_parallel");
    const auto& w = c["workload"];
    EXPECT_EQ(w["buckets"], 8);
    EXPECT_EQ(w["parameters"], 4000000);
    EXPECT_EQ(w["compute_engine"], "cpu");  // host memory: the CPU loop
    // The communication alone: 8 x 10 ms on the serial channel (a sleep never ends early).
    EXPECT_GE(w["comm_ms"]["p50"].get<double>(), 80.0 * 0.98) << w.dump();
    EXPECT_LT(w["comm_ms"]["p50"].get<double>(), 140.0) << w.dump();
    // samples/s = batch x world / step.
    EXPECT_NEAR(w["samples_per_s"].get<double>(), 16.0 / (w["step_ms"]["p50"].get<double>() / 1e3), 1e-6);
    const double eff = w["overlap_efficiency"].get<double>();
    EXPECT_GE(eff, 0.0);
    EXPECT_LE(eff, 1.0);
  }
  const auto& off = by_overlap(cases, false)["workload"];
  const auto& on = by_overlap(cases, true)["workload"];
  // Overlap off: the step is compute then communication; exposed ≈ comm.
  EXPECT_LT(off["overlap_efficiency"].get<double>(), 0.4) << off.dump();
  EXPECT_GT(off["exposed_comm_ms"].get<double>(), 0.6 * off["comm_ms"]["p50"].get<double>()) << off.dump();
  // Overlap on: buckets 0..6 hide behind the backward that follows them; bucket 7 (10 ms) cannot.
  EXPECT_GT(on["overlap_efficiency"].get<double>(), 0.6) << on.dump();
  // The run's memory record: the estimate of the model (4,000,000 f32 parameters, Adam: 16 bytes each).
  const auto mem = dir.records("memory");
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0]["workload"], "data_parallel");
  EXPECT_EQ(mem[0]["computed"]["model_state_bytes"], 64000000u);
  EXPECT_TRUE(mem[0]["measured"]["host"].is_object()) << mem[0].dump();
  EXPECT_LT(on["step_ms"]["p50"].get<double>(), off["step_ms"]["p50"].get<double>()) << on.dump() << off.dump();
}

// Gloo and UCX at 1, 2 and 4 ranks, DDP and FSDP, overlap on and off: every record present and ok,
// the figures consistent, efficiency in [0, 1] (null only without communication).
TEST(Workload, GlooAndUcxAtOneTwoAndFourRanks) {
  std::vector<std::string> backends;
  for (const char* b : {"gloo", "ucx"})
    if (plugin_built(b)) backends.push_back(b);
  if (backends.empty()) GTEST_SKIP() << "neither the gloo nor the ucx plugin is built (dependency missing)";
  std::string list;
  for (const auto& b : backends) list += (list.empty() ? "\"" : ", \"") + b + "\"";
  JobDir dir;
  const CommandResult r = dir.run(dir.write("w.toml", std::string(R"(name = "workload-backends"
[defaults]
backends = [)") + list + R"(]
workload = "data_parallel"
model = { layers = [ { name = "emb", parameters = 65536, flops = 1e5 },
                     { name = "fc1", parameters = 131072, activations = 512, flops = 4e5 },
                     { name = "fc2", parameters = 65536, flops = 2e5 } ] }
bucket_size = "256KiB"
compute_ms = 4
steps = 3
warmup = 1
world_sizes = [1, 2, 4]
[[run]]
name = "ddp"
[[run]]
name = "fsdp"
sharding = "fsdp"
)"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), backends.size() * 3 * 2 * 2) << r.output;
  for (const auto& c : cases) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    const auto& w = c["workload"];
    EXPECT_EQ(w["sharding"], c["run"]) << c.dump();
    EXPECT_EQ(w["parameters"], 262144);
    EXPECT_GT(w["step_ms"]["p50"].get<double>(), 0);
    EXPECT_GT(w["samples_per_s"].get<double>(), 0);
    if (w["overlap_efficiency"].is_null()) continue;
    EXPECT_GE(w["overlap_efficiency"].get<double>(), 0.0) << c.dump();
    EXPECT_LE(w["overlap_efficiency"].get<double>(), 1.0) << c.dump();
  }
}

// A step with no collective still times a few µs of its barrier as "communication": its overlap
// efficiency is null (docs/workloads.md), not the 100 % that noise once gave.
TEST(Workload, AStepWithoutCollectivesHasNoOverlapEfficiency) {
  REQUIRE_PLUGINS("gloo");
  JobDir dir;
  const CommandResult r = dir.run(dir.write("w.toml", R"(name = "no-comm"
[[run]]
backend = "gloo"
world_size = 2
workload = "data_parallel"
model = { layers = [ { name = "a", parameters = 0 } ] }
steps = 3
)"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_FALSE(cases.empty());  // overlap on and off
  for (const auto& c : cases) {
    EXPECT_EQ(c["workload"]["collectives_per_step"], 0);
    EXPECT_TRUE(c["workload"]["overlap_efficiency"].is_null()) << c["workload"].dump();
  }
}

// scaling = "strong" end to end: the global batch (8) and compute_ms split among 1, 2 and 4 ranks,
// and summary.json's efficiency = (samples/s(N) / samples/s(1)) / N from the records themselves.
TEST(Workload, StrongScalingSplitsTheGlobalBatchAndScoresItFromTheRecords) {
  REQUIRE_PLUGINS("gloo");
  JobDir dir;
  const CommandResult r = dir.run(dir.write("w.toml", R"(name = "workload-strong"
[[run]]
backend = "gloo"
workload = "data_parallel"
model = { parameters = 262144, layers = 4 }
batch_size = 8
compute_ms = 8
steps = 3
overlap = true
world_sizes = [1, 2, 4]
scaling = "strong"
)"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<int, double> samples;
  for (const auto& c : dir.records()) {
    ASSERT_EQ(c["status"], "ok") << c.dump();
    const int n = c["world_size"].get<int>();
    const auto& w = c["workload"];
    EXPECT_EQ(w["batch_size"], 8 / n);
    EXPECT_EQ(w["global_batch_size"], 8);
    EXPECT_EQ(w["scaling"], "strong");
    EXPECT_NEAR(w["compute_target_ms"].get<double>(), 8.0 / n, 1e-9);
    samples[n] = w["samples_per_s"].get<double>();
  }
  ASSERT_EQ(samples.size(), 3u);
  const auto summary = nlohmann::json::parse(read_text(dir.job_folder() / "summary.json"));
  ASSERT_EQ(summary["scaling"].size(), 1u) << summary["scaling"].dump();
  const auto& series = summary["scaling"][0];
  EXPECT_EQ(series["mode"], "strong");
  EXPECT_EQ(series["batch_size"], 8);
  for (const auto& p : series["points"]) {
    const int n = p["world_size"].get<int>();
    EXPECT_NEAR(p["efficiency"].get<double>(), samples.at(n) / samples.at(1) / n, 1e-9) << p.dump();
  }
}

// A rank that crashes in a step case: that case has a `failed` record naming its model and
// overlap (it had none, and was counted "not run"); the other overlap value is not run.
TEST(Workload, AStepCaseAFailedExecutionBrokeInHasAFailedRecord) {
  JobDir dir;
  const CommandResult r = dir.run(dir.write("w.toml", std::string(R"(name = "workload"
plugin_path = [")") + COMMBENCH_TEST_PLUGIN_DIR + R"("]
[[run]]
backend = "crash"
workload = "data_parallel"
model = { parameters = 400000, layers = 4 }
bucket_size = "1MB"
batch_size = 4
compute_ms = 2
steps = 3
warmup = 1
world_size = 2
overlap = [true, false]
check = false
options.crash = { crash_rank = "1", crash_after = "6", mode = "segv" }
)"), {"--quiet"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 1u) << r.output;
  EXPECT_EQ(cases[0]["status"], "failed") << cases[0].dump();
  EXPECT_EQ(cases[0]["op"], "data_parallel") << cases[0].dump();
  EXPECT_NE(cases[0]["reason"].get<std::string>().find("SIGSEGV"), std::string::npos) << cases[0].dump();
  EXPECT_EQ(cases[0]["workload"]["overlap"], true) << cases[0].dump();
  EXPECT_EQ(cases[0]["workload"]["parameters"], 400000) << cases[0].dump();
  EXPECT_TRUE(cases[0]["samples_us"].empty()) << cases[0].dump();
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["cases_done"], 1) << execs[0].dump();
  EXPECT_EQ(execs[0]["case_total"], 2) << execs[0].dump();
}

TEST(Workload, BadModelIsAPositionedError) {
  JobDir dir;
  const CommandResult r = dir.run(dir.write("w.toml", std::string(R"(name = "bad"
plugin_path = [")") + COMMBENCH_TEST_PLUGIN_DIR + R"("]
[[run]]
backend = "sleep"
workload = "data_parallel"
model = "resnet5"
[[run]]
backend = "sleep"
workload = "data_parallel"
model = { layers = [ { name = "a", parameters = -3 } ] }
[[run]]
backend = "sleep"
workload = "data_parallel"
)"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("w.toml:6:9"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("resnet50"), std::string::npos) << r.output;  // the suggestion
  EXPECT_NE(r.output.find("parameters"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("'workload' needs 'model'"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace commbench::testing
