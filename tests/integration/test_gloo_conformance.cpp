// Every Gloo op x dtype x reduce op on small sizes, check on, through the real runner.
// A case is either measured with #wrong == 0, or unsupported for a reason the plugin's
// capabilities give (fp8 arithmetic, avg); nothing else is acceptable.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

bool expected_unsupported(const nlohmann::json& c) {
  const std::string op = c["op"], dtype = c["dtype"], redop = c.value("redop", "");
  const bool reduction = op == "allreduce" || op == "reducescatter" || op == "reduce";
  return reduction && (dtype == "f8e4m3" || dtype == "f8e5m2" || redop == "avg");
}

void conformance(int world) {
  JobDir dir;
  const auto file = dir.write("conformance.toml", fmt::format(R"(
name = "gloo-conformance"
[[run]]
backends = ["gloo"]
ops = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
       "gather", "scatter", "barrier", "pingpong", "unidir_bw", "sendrecv"]
dtypes = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "f16", "bf16", "f32", "f64",
          "f8e4m3", "f8e5m2"]
redops = ["sum", "prod", "min", "max", "avg"]
sizes = ["1 elements", "7 elements", "1000 elements"]
placement = ["out_of_place", "in_place"]
world_size = {}
root = {}
warmup = 0
iterations = 1
window = 4
check = true
timeout = "5min"
)", world, world - 1));
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  size_t measured = 0, unsupported = 0;
  for (const auto& c : cases) {
    if (expected_unsupported(c)) {
      EXPECT_EQ(c["status"], "unsupported") << c.dump();
      EXPECT_FALSE(c["reason"].get<std::string>().empty());
      ++unsupported;
      continue;
    }
    EXPECT_EQ(c["status"], "ok") << c.dump();
    if (c["op"] != "barrier") EXPECT_EQ(c["wrong"], 0) << c.dump();
    ++measured;
  }
  // 12 movement dtypes for 9 non-reduction ops (barrier once) + 3 reductions x 12 x 5, x sizes/placements.
  EXPECT_GT(measured, 500u);
  EXPECT_GT(unsupported, 100u);
}

TEST(GlooConformance, TwoRanks) { conformance(2); }
TEST(GlooConformance, ThreeRanks) { conformance(3); }
TEST(GlooConformance, FourRanks) { conformance(4); }

}  // namespace
}  // namespace commbench::testing
