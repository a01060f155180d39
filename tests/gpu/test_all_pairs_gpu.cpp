// Seed 003's all-pairs sweep on device memory (NCCL, simulated GPU by default): every directed
// pair and size is measured from GPU buffers and checked byte by byte through host copies, and
// the execution log has each timed transfer. Before 2026-12-01 it was `unsupported` ("all_pairs
// runs on host memory only"), though the seed profiles GPU-to-GPU links.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <tuple>

#include "gpu_test_harness.h"
#include "job_harness.h"

namespace commbench::testing {
namespace {

TEST(AllPairsOnGpu, EveryPairAndSizeIsMeasuredAndCheckedOnDeviceMemory) {
  REQUIRE_NCCL("nccl", 3);
  JobDir dir;
  const auto file = dir.write("pairs.toml", R"(
name = "gpu-pairs"
[[run]]
backend = "nccl"
memory = "cuda"
world_size = 3
ops = ["all_pairs"]
sizes = ["1B", "4KiB", "1MiB"]
dtype = "uint8"
warmup = 1
iterations = 3
)");
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 6u * 3u) << r.output;  // 6 directed pairs x 3 sizes
  std::set<std::tuple<int, int, uint64_t>> seen;
  for (const auto& c : cases) {
    EXPECT_EQ(c["status"], "ok") << c.dump();
    EXPECT_EQ(c["memory"], "cuda") << c.dump();
    EXPECT_EQ(c["wrong"], 0) << "checked, and right: " << c.dump();
    EXPECT_GT(c["time_us"]["min"].get<double>(), 0.0) << c.dump();
    EXPECT_EQ(c["rank_aggregation"], "sender_to_arrival") << "one host, one clock: " << c.dump();
    seen.insert({c["src"].get<int>(), c["dst"].get<int>(), c["bytes"].get<uint64_t>()});
  }
  EXPECT_EQ(seen.size(), 18u);
  std::istringstream log(read_text(dir.job_folder() / "execution_log.csv"));
  int rows = -1;  // the header
  for (std::string line; std::getline(log, line);) ++rows;
  EXPECT_EQ(rows, 18 * 3) << "every timed transfer of every repetition";
}

}  // namespace
}  // namespace commbench::testing
