// Every collective algorithm of the ucx plugin, over the in-memory channel: each op x algorithm
// x world size 1..9 and 16 x awkward counts x placement against a reference computed directly
// from all ranks' inputs; every dtype and reduce op for the reductions; and the choice by size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "collectives/collectives.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/plugin_error.hpp"
#include "memory_channel.h"

namespace commbench::ucx_backend {
namespace {

using testing::MemoryChannel;
using testing::MemoryFabric;

struct Case {
  cb_op op;
  Algorithm forced;  // for allreduce/allgather/reducescatter; kAuto elsewhere
  int world;
  size_t count;
  bool in_place;
  cb_dtype dtype = CB_DTYPE_F32;
  cb_redop redop = CB_REDOP_SUM;
  int root = 0;
};

std::string describe(const Case& c) {
  return fmt::format("{} {} n={} count={} {} {} {} root={}", sdk::op_name(c.op), algorithm_name(c.forced),
                     c.world, c.count, c.in_place ? "in_place" : "out_of_place", sdk::dtype_name(c.dtype),
                     sdk::redop_name(c.redop), c.root);
}

bool is_reduction(cb_op op) { return op == CB_OP_ALLREDUCE || op == CB_OP_REDUCESCATTER || op == CB_OP_REDUCE; }

// Inputs whose reduction is exact in every dtype whatever the order (small integers).
double reduce_input(const Case& c, int rank, size_t i) {
  const double exact = sdk::max_exact_integer(c.dtype);
  const auto m = static_cast<size_t>(std::clamp(std::floor(exact / c.world), 1.0, 8.0));
  switch (c.redop) {
    case CB_REDOP_PROD: return i % static_cast<size_t>(c.world) == static_cast<size_t>(rank) ? 2.0 : 1.0;
    case CB_REDOP_MIN:
    case CB_REDOP_MAX: return static_cast<double>((static_cast<size_t>(rank) * 3 + i) % (m + 1));
    default: return static_cast<double>((static_cast<size_t>(rank) + i) % m);
  }
}

// Data-movement inputs: distinct per (source, index) within what every dtype holds exactly.
double move_input(const Case& c, int rank, size_t i) {
  const auto m = static_cast<size_t>(std::min(sdk::max_exact_integer(c.dtype), 100.0));
  return static_cast<double>((static_cast<size_t>(rank) * 31 + i * 7 + 1) % m);
}

double combine(cb_redop op, double a, double b) {
  switch (op) {
    case CB_REDOP_PROD: return a * b;
    case CB_REDOP_MIN: return std::min(a, b);
    case CB_REDOP_MAX: return std::max(a, b);
    default: return a + b;
  }
}

size_t send_elements(const Case& c) {
  switch (c.op) {
    case CB_OP_REDUCESCATTER: case CB_OP_ALLTOALL: case CB_OP_SCATTER: return c.count * c.world;
    default: return c.count;
  }
}
size_t recv_elements(const Case& c) {
  switch (c.op) {
    case CB_OP_ALLGATHER: case CB_OP_ALLTOALL: case CB_OP_GATHER: return c.count * c.world;
    default: return c.count;
  }
}

struct RankBuffers {
  std::vector<unsigned char> storage, second;
  void* send = nullptr;
  void* recv = nullptr;
};

RankBuffers make_buffers(const Case& c, int rank) {
  const size_t es = sdk::dtype_size(c.dtype), se = send_elements(c), re = recv_elements(c);
  RankBuffers b;
  const size_t block = c.count * es * static_cast<size_t>(rank);
  if (c.in_place) {
    b.storage.assign(std::max(se, re) * es + 1, 0xEE);
    b.send = b.recv = b.storage.data();
    if (c.op == CB_OP_ALLGATHER || c.op == CB_OP_GATHER) b.send = b.storage.data() + block;
    if (c.op == CB_OP_REDUCESCATTER || c.op == CB_OP_SCATTER) b.recv = b.storage.data() + block;
  } else {
    b.storage.assign(se * es + 1, 0xEE);
    b.second.assign(re * es + 1, 0xEE);
    b.send = b.storage.data();
    b.recv = b.second.data();
  }
  for (size_t i = 0; i < se; ++i)
    sdk::store_from_double(c.dtype, b.send, i, is_reduction(c.op) ? reduce_input(c, rank, i) : move_input(c, rank, i));
  return b;
}

// What rank `r` must hold in its receive buffer (nullopt: nothing is defined there).
std::optional<double> expected(const Case& c, int r, size_t i) {
  const size_t n = static_cast<size_t>(c.world);
  auto reduced = [&](size_t index) {
    double acc = reduce_input(c, 0, index);
    for (int j = 1; j < c.world; ++j) acc = combine(c.redop, acc, reduce_input(c, j, index));
    if (c.redop == CB_REDOP_AVG) {
      unsigned char tmp[8];
      sdk::store_from_double(c.dtype, tmp, 0, acc);
      sdk::reduce_finish_avg(c.dtype, tmp, 1, c.world);  // the SDK's own rounding of the division
      acc = sdk::load_as_double(c.dtype, tmp, 0);
    }
    return acc;
  };
  const size_t block = c.count == 0 ? 0 : i / c.count, k = c.count == 0 ? 0 : i % c.count;
  switch (c.op) {
    case CB_OP_ALLREDUCE: return reduced(i);
    case CB_OP_REDUCE: return r == c.root ? std::optional(reduced(i)) : std::nullopt;
    case CB_OP_REDUCESCATTER: return reduced(static_cast<size_t>(r) * c.count + i);
    case CB_OP_ALLGATHER: return move_input(c, static_cast<int>(block), k);
    case CB_OP_GATHER:
      return r == c.root ? std::optional(move_input(c, static_cast<int>(block), k)) : std::nullopt;
    case CB_OP_BROADCAST: return move_input(c, c.root, i);
    case CB_OP_ALLTOALL: return move_input(c, static_cast<int>(block), static_cast<size_t>(r) * c.count + k);
    case CB_OP_SCATTER: return move_input(c, c.root, static_cast<size_t>(r) * c.count + i);
    default: (void)n; return std::nullopt;
  }
}

AlgorithmChoice choice_for(const Case& c) {
  AlgorithmChoice choice;
  if (c.op == CB_OP_ALLREDUCE) choice.allreduce = c.forced;
  if (c.op == CB_OP_ALLGATHER) choice.allgather = c.forced;
  if (c.op == CB_OP_REDUCESCATTER) choice.reducescatter = c.forced;
  return choice;
}

// Runs the case on c.world threads; returns the number of wrong elements (and fails on errors).
void run_and_check(const Case& c) {
  SCOPED_TRACE(describe(c));
  MemoryFabric fabric(c.world);
  std::vector<RankBuffers> buffers;
  for (int r = 0; r < c.world; ++r) buffers.push_back(make_buffers(c, r));
  std::vector<std::string> errors(static_cast<size_t>(c.world));
  std::vector<std::thread> threads;
  for (int r = 0; r < c.world; ++r)
    threads.emplace_back([&, r] {
      try {
        MemoryChannel ch(fabric, r);
        Scratch scratch;
        CollectiveArgs a{buffers[r].send, buffers[r].recv, c.count, c.dtype, c.redop, c.root};
        for (int repeat = 0; repeat < 2; ++repeat) {  // scratch reuse across calls
          ch.begin();
          run_collective(ch, c.op, a, choice_for(c), scratch);
          if (c.in_place) break;  // the input is consumed in place
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < c.world; ++r) ASSERT_EQ(errors[r], "") << "rank " << r;
  EXPECT_EQ(fabric.leftovers(), 0u) << "messages sent that nobody received";
  int64_t wrong = 0;
  std::string first;
  for (int r = 0; r < c.world; ++r) {
    for (size_t i = 0; i < recv_elements(c); ++i) {
      const auto want = expected(c, r, i);
      if (!want) continue;
      const double got = sdk::load_as_double(c.dtype, buffers[r].recv, i);
      if (got != *want) {
        if (first.empty()) first = fmt::format("rank {} element {}: got {}, want {}", r, i, got, *want);
        ++wrong;
      }
    }
  }
  EXPECT_EQ(wrong, 0) << first;
}

std::vector<Algorithm> variants(cb_op op) {
  switch (op) {
    case CB_OP_ALLREDUCE:
    case CB_OP_ALLGATHER: return {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling};
    case CB_OP_REDUCESCATTER: return {Algorithm::kAuto, Algorithm::kRing, Algorithm::kPairwise};
    default: return {Algorithm::kAuto};
  }
}

class EveryOp : public ::testing::TestWithParam<cb_op> {};

TEST_P(EveryOp, MatchesTheReferenceForEveryAlgorithmWorldCountAndPlacement) {
  const cb_op op = GetParam();
  for (Algorithm forced : variants(op))
    for (int world : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16})
      for (size_t count : {size_t{1}, size_t{3}, static_cast<size_t>(world + 1), size_t{1000}, size_t{4099}})
        for (bool in_place : {false, true}) {
          Case c{op, forced, world, count, in_place};
          c.root = world - 1;
          run_and_check(c);
          if (::testing::Test::HasFailure()) return;  // one clear failure, not thousands
        }
}

INSTANTIATE_TEST_SUITE_P(Collectives, EveryOp,
                         ::testing::Values(CB_OP_ALLREDUCE, CB_OP_ALLGATHER, CB_OP_REDUCESCATTER,
                                           CB_OP_BROADCAST, CB_OP_REDUCE, CB_OP_ALLTOALL,
                                           CB_OP_GATHER, CB_OP_SCATTER),
                         [](const auto& info) { return std::string(sdk::op_name(info.param)); });

TEST(Reductions, EveryDtypeAndRedopForEveryReductionAlgorithm) {
  for (cb_op op : {CB_OP_ALLREDUCE, CB_OP_REDUCESCATTER, CB_OP_REDUCE})
    for (Algorithm forced : variants(op))
      for (int world : {2, 3, 5, 8})
        for (int d = 0; d < CB_DTYPE_COUNT_V1; ++d)
          for (int o = 0; o < CB_REDOP_COUNT_V1; ++o) {
            Case c{op, forced, world, 37, world == 3};
            c.dtype = static_cast<cb_dtype>(d);
            c.redop = static_cast<cb_redop>(o);
            c.root = 1;
            run_and_check(c);
            if (::testing::Test::HasFailure()) return;
          }
}

TEST(Barrier, CompletesOnEveryWorldSizeAndLeavesNoMessages) {
  for (int world = 1; world <= 17; ++world) run_and_check(Case{CB_OP_BARRIER, Algorithm::kAuto, world, 0, false});
}

TEST(Barrier, DoesNotCompleteWhileARankIsMissing) {
  // Rank 2 of 3 never arrives: the others must not get through.
  MemoryFabric fabric(3);
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      MemoryChannel ch(fabric, r, std::chrono::milliseconds(300));
      Scratch s;
      ch.begin();
      try {
        run_collective(ch, CB_OP_BARRIER, CollectiveArgs{}, AlgorithmChoice{}, s);
      } catch (const sdk::PluginError& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors) EXPECT_NE(e.find("no message from rank"), std::string::npos) << e;
}

TEST(Choice, AutoSwitchesAtTheThreshold) {
  AlgorithmChoice c;
  c.small_message_bytes = 4096;
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 4095, 4, c), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 4096, 4, c), Algorithm::kRing);
  EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 100, 4, c), Algorithm::kPairwise);
  EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 1 << 20, 4, c), Algorithm::kRing);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLGATHER, 100, 4, c), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLGATHER, 100, 6, c), Algorithm::kRing);  // not a power of two
  EXPECT_EQ(chosen_algorithm(CB_OP_BROADCAST, 100, 4, c), Algorithm::kBinomial);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLTOALL, 100, 4, c), Algorithm::kPairwise);
  EXPECT_EQ(chosen_algorithm(CB_OP_GATHER, 100, 4, c), Algorithm::kLinear);
  EXPECT_EQ(chosen_algorithm(CB_OP_BARRIER, 0, 4, c), Algorithm::kDissemination);
  c.allreduce = Algorithm::kRing;  // forced wins over size
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 8, 4, c), Algorithm::kRing);
}

TEST(Choice, AnAlgorithmForeignToItsOpIsRejectedWithTheValidOnes) {
  AlgorithmChoice c;
  c.allreduce = Algorithm::kBinomial;
  try {
    validate_choice(c);
    FAIL() << "binomial allreduce accepted";
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("allreduce_algorithm = \"binomial\""), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("auto, ring, recursive_doubling"), std::string::npos) << e.what();
  }
  c = AlgorithmChoice{};
  c.reducescatter = Algorithm::kRecursiveDoubling;
  EXPECT_THROW(validate_choice(c), sdk::PluginError);
  c = AlgorithmChoice{};
  c.reducescatter = Algorithm::kPairwise;
  EXPECT_NO_THROW(validate_choice(c));
}

TEST(Choice, NamesRoundTrip) {
  for (Algorithm a : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling, Algorithm::kPairwise,
                      Algorithm::kBinomial, Algorithm::kLinear, Algorithm::kDissemination})
    EXPECT_EQ(parse_algorithm(algorithm_name(a)), a);
  EXPECT_FALSE(parse_algorithm("tree").has_value());
}

}  // namespace
}  // namespace commbench::ucx_backend
