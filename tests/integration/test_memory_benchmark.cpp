// workload = "memory" end to end on Gloo (host memory): one record per batch size, the computed
// figures as docs/workloads.md's formulas give them, host RSS grown by at least what was
// allocated, no device figures, and the same records in summary.json's suite.
#include <gtest/gtest.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

TEST(MemoryBenchmark, GlooHostRecordsComputedNextToMeasured) {
  JobDir dir;
  // 4 Mi parameters, 256 Ki activation elements per sample, fp32, Adam: by hand, per rank
  // parameters 16 MiB, gradients 16 MiB, Adam moments 32 MiB, no master copy (fp32) = 64 MiB of
  // model state; activations 1 MiB per sample.
  const auto file = dir.write("mem.toml", R"(
name = "mem"
[[run]]
name = "mem-gloo"
backend = "gloo"
world_size = 2
workload = "memory"
model = { parameters = 4194304, layers = 4, activations = 262144 }
batch_sizes = [1, 8]
optimizer = "adam"
dtype = "f32"
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto mem = dir.records("memory");
  ASSERT_EQ(mem.size(), 2u) << r.output;
  const uint64_t MiB = 1 << 20;
  for (size_t i = 0; i < mem.size(); ++i) {
    const auto& m = mem[i];
    const uint64_t batch = i == 0 ? 1 : 8;
    EXPECT_EQ(m["status"], "ok") << m.dump();
    EXPECT_EQ(m["batch_size"], batch);
    EXPECT_EQ(m["world_size"], 2);
    EXPECT_EQ(m["backend"], "gloo");
    const auto& c = m["computed"];
    EXPECT_EQ(c["parameter_bytes"], 16 * MiB);
    EXPECT_EQ(c["gradient_bytes"], 16 * MiB);
    EXPECT_EQ(c["optimizer_state_bytes"], 32 * MiB);
    EXPECT_EQ(c["master_weight_bytes"], 0u);
    EXPECT_EQ(c["activation_bytes_per_sample"], 1 * MiB);
    EXPECT_EQ(c["activation_bytes"], batch * MiB);
    EXPECT_EQ(c["total_bytes"], 64 * MiB + batch * MiB);
    const auto& host = m["measured"]["host"];
    // Every page was touched: resident memory grew by what was allocated. RSS is the whole
    // process's, and pages elsewhere may leave it meanwhile (seen once: one page short of 65 MiB),
    // so 1 MiB of slack; buffers never touched would leave it tens of MiB short.
    constexpr uint64_t kSlack = 1 * MiB;
    EXPECT_GE(host["buffers_bytes"].get<uint64_t>() + kSlack, c["model_state_bytes"].get<uint64_t>()) << m.dump();
    EXPECT_GE(host["workload_bytes"].get<uint64_t>() + kSlack, c["total_bytes"].get<uint64_t>()) << m.dump();
    EXPECT_GE(host["rss_peak_bytes"].get<uint64_t>(), host["rss_after_workload_bytes"].get<uint64_t>());
    EXPECT_GE(host["rss_after_comm_bytes"].get<uint64_t>(), 1u);
    EXPECT_TRUE(m["measured"]["device"].is_null()) << "host memory: no device figures";
    EXPECT_NE(m["measured"]["device_note"].get<std::string>().find("host RSS"), std::string::npos);
  }
  const auto summary = nlohmann::json::parse(read_text(dir.job_folder() / "summary.json"));
  ASSERT_EQ(summary["suite"]["memory"].size(), 2u);
  for (size_t i = 0; i < mem.size(); ++i) {
    EXPECT_EQ(summary["suite"]["memory"][i]["computed"], mem[i]["computed"]);
    EXPECT_EQ(summary["suite"]["memory"][i]["measured"], mem[i]["measured"]);
  }
}

}  // namespace
}  // namespace commbench::testing
