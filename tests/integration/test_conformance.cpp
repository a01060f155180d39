// Every op x dtype x reduce op on small sizes, check on, through the real runner, for each
// backend built here. A case is either measured with #wrong == 0, or unsupported for a reason
// the plugin's capabilities give (gloo: fp8 arithmetic, avg); nothing else is acceptable.
#include <gtest/gtest.h>

#include <filesystem>
#include <ostream>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

struct Backend {
  const char* name;
  bool (*expected_unsupported)(const nlohmann::json& c);
};

bool gloo_unsupported(const nlohmann::json& c) {
  const std::string op = c["op"], dtype = c["dtype"], redop = c.value("redop", "");
  const bool reduction = op == "allreduce" || op == "reducescatter" || op == "reduce";
  return reduction && (dtype == "f8e4m3" || dtype == "f8e5m2" || redop == "avg");
}

// commbench's own host reductions cover every dtype and reduce op.
bool ucx_unsupported(const nlohmann::json&) { return false; }

// Test names carry the backend; this keeps gtest from printing the struct's bytes.
void PrintTo(const Backend& b, std::ostream* os) { *os << b.name; }


class Conformance : public ::testing::TestWithParam<std::tuple<Backend, int>> {};

TEST_P(Conformance, EveryOpDtypeRedopIsCorrectOrUnsupported) {
  const auto& [backend, world] = GetParam();
  if (!plugin_built(backend.name)) GTEST_SKIP() << backend.name << " plugin not built (dependency missing)";
  JobDir dir;
  const auto file = dir.write("conformance.toml", fmt::format(R"(
name = "{0}-conformance"
[[run]]
backends = ["{0}"]
ops = ["allreduce", "allgather", "reducescatter", "broadcast", "reduce", "alltoall",
       "gather", "scatter", "barrier", "pingpong", "unidir_bw", "bidir_bw", "msg_rate",
       "sendrecv", "all_pairs"]
dtypes = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "f16", "bf16", "f32", "f64",
          "f8e4m3", "f8e5m2"]
redops = ["sum", "prod", "min", "max", "avg"]
sizes = ["1 elements", "7 elements", "1000 elements"]
placement = ["out_of_place", "in_place"]
world_size = {1}
root = {2}
warmup = 0
iterations = 1
window = 4
check = true
timeout = "5min"
)", backend.name, world, world - 1));
  const CommandResult r = dir.run(file, {"--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  size_t measured = 0, unsupported = 0, pairs = 0;
  for (const auto& c : cases) {
    if (backend.expected_unsupported(c)) {
      EXPECT_EQ(c["status"], "unsupported") << c.dump();
      EXPECT_FALSE(c["reason"].get<std::string>().empty());
      EXPECT_FALSE(c.contains("timed_page_faults")) << c.dump();  // nothing was timed
      ++unsupported;
      continue;
    }
    EXPECT_EQ(c["status"], "ok") << c.dump();
    if (c["op"] != "barrier") EXPECT_EQ(c["wrong"], 0) << c.dump();
    // Counted for op cases; all_pairs times transfers of its own (docs/output.md).
    EXPECT_EQ(c.contains("timed_page_faults"), c["op"] != "all_pairs") << c.dump();
    if (c.contains("timed_page_faults")) EXPECT_GE(c["timed_page_faults"].get<int64_t>(), 0) << c.dump();
    pairs += c["op"] == "all_pairs";
    ++measured;
  }
  // all_pairs: every directed pair x 3 sizes x 12 dtypes.
  EXPECT_EQ(pairs, static_cast<size_t>(world * (world - 1) * 3 * 12));
  EXPECT_GT(measured, 500u);
  if (std::string(backend.name) == "gloo") EXPECT_GT(unsupported, 100u);
  else EXPECT_EQ(unsupported, 0u);
}

std::string name_of(const ::testing::TestParamInfo<std::tuple<Backend, int>>& info) {
  return fmt::format("{}_{}ranks", std::get<0>(info.param).name, std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance,
                         ::testing::Combine(::testing::Values(Backend{"gloo", gloo_unsupported},
                                                              Backend{"ucx", ucx_unsupported}),
                                            ::testing::Values(2, 3, 4)),
                         name_of);

}  // namespace
}  // namespace commbench::testing
