// The allreduce_algorithm option: bcube (new API, any placement), ring_chunked and
// halving_doubling (old-style algorithm objects: in place only, cached per buffer).
#include <gtest/gtest.h>

#include <tuple>

#include "patterns.h"
#include "test_support.h"

namespace commbench::test {
namespace {

using AlgorithmParam = std::tuple<int, std::string>;

class GlooAllreduceAlgorithms : public ::testing::TestWithParam<AlgorithmParam> {
 protected:
  int world() const { return std::get<0>(GetParam()); }
  const std::string& algorithm() const { return std::get<1>(GetParam()); }
  bool in_place_only() const { return algorithm() != "bcube"; }
  Options options() const { return test_options({{"allreduce_algorithm", algorithm()}}); }
};

TEST_P(GlooAllreduceAlgorithms, EveryReducibleDtypeAndRedop) {
  const std::vector<bool> placements = in_place_only() ? std::vector<bool>{true} : std::vector<bool>{false, true};
  const auto failures = run_cases(world(), options(), reduction_cases(CB_OP_ALLREDUCE, {0}, placements));
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

INSTANTIATE_TEST_SUITE_P(
    WorldSizes, GlooAllreduceAlgorithms,
    ::testing::Combine(::testing::Values(2, 3, 4),
                       ::testing::Values("bcube", "ring_chunked", "halving_doubling")),
    [](const auto& info) {
      return std::get<1>(info.param) + "_world" + std::to_string(std::get<0>(info.param));
    });

// ring_chunked and halving_doubling: old-style objects bound to one buffer.
class GlooInPlaceOnlyAlgorithms : public GlooAllreduceAlgorithms {};

TEST_P(GlooInPlaceOnlyAlgorithms, OutOfPlaceIsUnimplemented) {
  const auto failures = run_ranks(gloo_plugin_path(), world(), options(), [&](RankSession& s) {
    float in = 1, out = 0;
    const Status status = s.run(make_args(CB_OP_ALLREDUCE, &in, &out, 1, CB_DTYPE_F32));
    if (status.code != CB_ERR_UNIMPLEMENTED || status.message.find("in_place") == std::string::npos)
      throw std::runtime_error("expected UNIMPLEMENTED naming in_place, got: " + status.message);
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

// The old-style objects are cached per buffer, and buffers are per rank: when one rank reuses
// a buffer while another switches buffers, all ranks must still rebuild together.
TEST_P(GlooInPlaceOnlyAlgorithms, CacheStaysConsistentWhenRanksSwitchBuffersDifferently) {
  constexpr size_t kCount = 257;
  const auto failures = run_ranks(gloo_plugin_path(), world(), options(), [&](RankSession& s) {
    RankChecks checks(s.rank());
    std::vector<float> first(kCount), second(kCount);
    for (int round = 0; round < 6; ++round) {
      // Rank 0 always uses `first`; the others alternate, and the sizes repeat.
      std::vector<float>& buffer = (s.rank() == 0 || round % 2 == 0) ? first : second;
      fill_reduction_input(CB_DTYPE_F32, buffer.data(), kCount, s.rank());
      const Status status = s.run(make_args(CB_OP_ALLREDUCE, buffer.data(), buffer.data(), kCount, CB_DTYPE_F32));
      checks.expect(status.ok(), "round " + std::to_string(round) + ": " + status.message);
      for (size_t i = 0; i < kCount; ++i)
        if (buffer[i] != expected_reduction(CB_REDOP_SUM, s.world_size(), i)) {
          checks.expect(false, "round " + std::to_string(round) + " element " + std::to_string(i) +
                                   " = " + std::to_string(buffer[i]));
          break;
        }
    }
    checks.finish();
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

INSTANTIATE_TEST_SUITE_P(
    WorldSizes, GlooInPlaceOnlyAlgorithms,
    ::testing::Combine(::testing::Values(2, 3, 4), ::testing::Values("ring_chunked", "halving_doubling")),
    [](const auto& info) {
      return std::get<1>(info.param) + "_world" + std::to_string(std::get<0>(info.param));
    });

}  // namespace
}  // namespace commbench::test
