// Every collective algorithm of the ucx plugin over the in-memory channel: each op x algorithm
// x world size 1..9 and 16 x awkward counts x placement x root; every dtype and reduce op for
// the reductions, every dtype for data movement; and the barrier's guarantee.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "collective_runner.h"
#include "collectives/collectives.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/plugin_error.hpp"
#include "memory_channel.h"

namespace commbench::ucx_backend {
namespace {

using test::Case;
using test::MemoryChannel;
using test::MemoryFabric;
using test::run_and_check;

// The forced variants of an op: kAuto with the default thresholds and with thresholds of 1 and
// 8 KiB (so that auto runs all three tiers over the counts below), and every forced algorithm,
// the ring both unsegmented and in segments of 20 bytes (up to 64 per block: the pipeline's
// windows, slot reuse and step numbering all in play).
struct Variant {
  Algorithm forced;
  size_t threshold;
  size_t ring_bytes = 4 * 1024 * 1024;
  size_t segment_bytes = 256 * 1024;
};
std::vector<Variant> variants(cb_op op) {
  std::vector<Variant> out{{Algorithm::kAuto, 64 * 1024}};
  const auto valid = valid_algorithms(op);
  if (valid.size() > 1) {
    out.push_back({Algorithm::kAuto, 1024, 8 * 1024, 20});
    for (Algorithm a : valid)
      if (a != Algorithm::kAuto) out.push_back({a, 64 * 1024});
    for (Algorithm a : valid)
      if (a == Algorithm::kRing) out.push_back({a, 64 * 1024, 4 * 1024 * 1024, 20});
  }
  return out;
}

Case variant_case(cb_op op, const Variant& v, int world, size_t count, bool in_place, int root) {
  Case c{op, v.forced, world, count, in_place};
  c.threshold = v.threshold;
  c.ring_bytes = v.ring_bytes;
  c.segment_bytes = v.segment_bytes;
  c.root = root;
  return c;
}

template <class T>
std::vector<T> distinct(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

class EveryOp : public ::testing::TestWithParam<cb_op> {};

TEST_P(EveryOp, MatchesTheReferenceForEveryAlgorithmWorldCountPlacementAndRoot) {
  const cb_op op = GetParam();
  const bool rooted = op == CB_OP_BROADCAST || op == CB_OP_REDUCE || op == CB_OP_GATHER || op == CB_OP_SCATTER;
  for (const Variant& v : variants(op))
    for (int world : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16}) {
      const auto w = static_cast<size_t>(world);
      // Not divisible by the world, smaller than it (empty ring blocks), and 0.
      for (size_t count : distinct<size_t>({0, 1, 3, w - 1, w + 1, 1000, 4099}))
        for (int root : rooted ? distinct<int>({0, world / 2, world - 1}) : std::vector<int>{0})
          for (bool in_place : {false, true}) {
            run_and_check(variant_case(op, v, world, count, in_place, root));
            if (::testing::Test::HasFailure()) return;  // one clear failure, not thousands
          }
    }
}

// The same algorithms when every send completes only once its receiver has taken it (UCX's
// rendezvous, used for large messages): no algorithm may rely on sends being buffered.
TEST_P(EveryOp, MatchesTheReferenceWhenSendsWaitForTheirReceiver) {
  const cb_op op = GetParam();
  const bool rooted = op == CB_OP_BROADCAST || op == CB_OP_REDUCE || op == CB_OP_GATHER || op == CB_OP_SCATTER;
  for (const Variant& v : variants(op))
    for (int world : {2, 3, 4, 5, 8}) {
      const auto w = static_cast<size_t>(world);
      for (size_t count : distinct<size_t>({w + 1, 1000, 4099}))
        for (int root : rooted ? distinct<int>({0, world - 1}) : std::vector<int>{0})
          for (bool in_place : {false, true}) {
            Case c = variant_case(op, v, world, count, in_place, root);
            c.rendezvous = true;
            run_and_check(c);
            if (::testing::Test::HasFailure()) return;
          }
    }
}

// Ranks that differ in placement (legal: each rank chooses, as in NCCL) run one algorithm
// together: every variant at the sizes where `auto` changes tiers.
TEST_P(EveryOp, MatchesTheReferenceWhenRanksDifferInPlacement) {
  const cb_op op = GetParam();
  const bool rooted = op == CB_OP_BROADCAST || op == CB_OP_REDUCE || op == CB_OP_GATHER || op == CB_OP_SCATTER;
  for (const Variant& v : variants(op))
    for (int world : {2, 3, 4})
      for (size_t count : {size_t{1000}, size_t{20000}, size_t{300000}})
        for (int root : rooted ? std::vector<int>{0, world - 1} : std::vector<int>{0}) {
          Case c = variant_case(op, v, world, count, false, root);
          c.mixed_placement = true;
          run_and_check(c);
          if (::testing::Test::HasFailure()) return;
        }
}

INSTANTIATE_TEST_SUITE_P(Collectives, EveryOp,
                         ::testing::Values(CB_OP_ALLREDUCE, CB_OP_ALLGATHER, CB_OP_REDUCESCATTER,
                                           CB_OP_BROADCAST, CB_OP_REDUCE, CB_OP_ALLTOALL,
                                           CB_OP_GATHER, CB_OP_SCATTER),
                         [](const auto& info) { return std::string(sdk::op_name(info.param)); });

TEST(Reductions, EveryDtypeAndRedopForEveryReductionAlgorithm) {
  for (cb_op op : {CB_OP_ALLREDUCE, CB_OP_REDUCESCATTER, CB_OP_REDUCE})
    for (Algorithm forced : valid_algorithms(op))
      for (int world : {2, 3, 5, 8})  // world 1 of every op: EveryOp
        for (int d = 0; d < CB_DTYPE_COUNT_V1; ++d)
          for (int o = 0; o < CB_REDOP_COUNT_V1; ++o)
            for (bool in_place : {false, true}) {
              // In place with 5 elements: fewer than 8 ranks, so some ring blocks are empty.
              Case c{op, forced, world, in_place ? size_t{5} : size_t{37}, in_place};
              c.dtype = static_cast<cb_dtype>(d);
              c.redop = static_cast<cb_redop>(o);
              c.root = world / 2;
              run_and_check(c);
              if (::testing::Test::HasFailure()) return;
            }
}

TEST(DataMovement, EveryDtype) {
  for (cb_op op : {CB_OP_ALLGATHER, CB_OP_BROADCAST, CB_OP_ALLTOALL, CB_OP_GATHER, CB_OP_SCATTER})
    for (Algorithm forced : valid_algorithms(op))
      for (int world : {3, 4})
        for (int d = 0; d < CB_DTYPE_COUNT_V1; ++d) {
          Case c{op, forced, world, 11, world == 4};
          c.dtype = static_cast<cb_dtype>(d);
          c.root = 1;
          run_and_check(c);
          if (::testing::Test::HasFailure()) return;
        }
}

TEST(Barrier, CompletesOnEveryWorldSizeAndLeavesNoMessages) {
  for (int world = 1; world <= 17; ++world) run_and_check(Case{CB_OP_BARRIER, Algorithm::kAuto, world, 0, false});
}

TEST(Barrier, NoRankLeavesBeforeEveryRankArrived) {
  for (int world : {2, 3, 5, 8, 13}) {
    MemoryFabric fabric(world);
    std::atomic<int> arrived{0}, early{0};
    std::vector<std::thread> threads;
    for (int r = 0; r < world; ++r)
      threads.emplace_back([&, r] {
        MemoryChannel ch(fabric, r);
        Scratch s;
        if (r == world / 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the late one
        arrived.fetch_add(1);
        ch.begin();
        try {
          run_collective(ch, CB_OP_BARRIER, CollectiveArgs{}, AlgorithmChoice{}, s);
        } catch (const std::exception&) {
          early.fetch_add(1000);
          fabric.abort();
        }
        if (arrived.load() != world) early.fetch_add(1);
      });
    for (auto& t : threads) t.join();
    EXPECT_EQ(early.load(), 0) << world << " ranks";
    EXPECT_TRUE(fabric.leftovers().empty());
  }
}

TEST(Barrier, TimesOutWhileARankIsMissing) {
  // Rank 2 of 3 never arrives: the others must not get through.
  MemoryFabric fabric(3);
  std::vector<cb_status> codes(2, CB_OK);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      MemoryChannel ch(fabric, r, std::chrono::milliseconds(200));
      Scratch s;
      ch.begin();
      try {
        run_collective(ch, CB_OP_BARRIER, CollectiveArgs{}, AlgorithmChoice{}, s);
      } catch (const sdk::PluginError& e) {
        codes[static_cast<size_t>(r)] = e.code();
      }
    });
  for (auto& t : threads) t.join();
  for (cb_status code : codes) EXPECT_EQ(code, CB_ERR_TIMEOUT);
}
}  // namespace
}  // namespace commbench::ucx_backend
