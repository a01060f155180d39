#include "collective_runner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"
#include "memory_channel.h"
#include "test_util.h"

namespace commbench::ucx_backend::test {

std::string describe(const Case& c) {
  return str(sdk::op_name(c.op), " ", algorithm_name(c.forced), " (thresholds ", c.threshold, "/", c.ring_bytes,
             ", segments of ", c.segment_bytes, " B) n=", c.world,
             " count=", c.count, c.mixed_placement ? " odd ranks in place " : c.in_place ? " in_place " : " out_of_place ", sdk::dtype_name(c.dtype), " ",
             sdk::redop_name(c.redop), " root=", c.root, c.rendezvous ? " rendezvous sends" : " buffered sends");
}

AlgorithmChoice choice_for(const Case& c) {
  AlgorithmChoice choice;
  if (c.op == CB_OP_ALLREDUCE) choice.allreduce = c.forced;
  if (c.op == CB_OP_ALLGATHER) choice.allgather = c.forced;
  if (c.op == CB_OP_REDUCESCATTER) choice.reducescatter = c.forced;
  choice.small_message_bytes = c.threshold;
  choice.ring_bytes = c.ring_bytes;
  choice.segment_bytes = c.segment_bytes;
  return choice;
}

namespace {

bool is_unsigned(cb_dtype d) { return d == CB_DTYPE_UINT8 || d == CB_DTYPE_UINT32 || d == CB_DTYPE_UINT64; }

// Reduction inputs: small integers, so the result is exact in every dtype whatever the order
// (the narrow floats hold integers up to sdk::max_exact_integer: e5m2 8, e4m3 16, bf16 256).
double reduce_input(const Case& c, int rank, size_t i) {
  const auto r = static_cast<size_t>(rank);
  switch (c.redop) {
    case CB_REDOP_PROD:  // 2 on some elements of ranks 0..2, 1 elsewhere: products 1, 2, 4, 8
      return rank < 3 && (i / (r + 1)) % 2 == 1 ? 2.0 : 1.0;
    case CB_REDOP_MIN:
    case CB_REDOP_MAX: {  // 0..8, or -4..4 where the dtype has negatives
      const double v = static_cast<double>((r * 5 + i * 3) % 9);
      return is_unsigned(c.dtype) ? v : v - 4;
    }
    default: {  // sum, avg: at most max_exact / world per rank, so the total stays exact
      const double top = std::min(std::floor(sdk::max_exact_integer(c.dtype) / c.world), 8.0);
      return static_cast<double>((r * 3 + i) % (static_cast<size_t>(top) + 1));
    }
  }
}

// Data-movement inputs: for each index, distinct for every source rank (31 is prime to 100),
// and exact in every dtype.
double move_input(const Case& c, int rank, size_t i) {
  const auto m = static_cast<size_t>(std::min(sdk::max_exact_integer(c.dtype), 100.0));
  return static_cast<double>((static_cast<size_t>(rank) * 31 + i * 7 + 1) % m);
}

double input(const Case& c, int rank, size_t i) {
  return sdk::is_reduction(c.op) ? reduce_input(c, rank, i) : move_input(c, rank, i);
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
    case CB_OP_REDUCESCATTER: case CB_OP_ALLTOALL: case CB_OP_SCATTER: return c.count * static_cast<size_t>(c.world);
    default: return c.count;
  }
}
size_t recv_elements(const Case& c) {
  switch (c.op) {
    case CB_OP_ALLGATHER: case CB_OP_ALLTOALL: case CB_OP_GATHER: return c.count * static_cast<size_t>(c.world);
    default: return c.count;
  }
}

// What rank r must hold at element i of its receive buffer (nullopt: nothing defined there).
std::optional<double> expected(const Case& c, int r, size_t i) {
  auto reduced = [&](size_t index) {
    double acc = reduce_input(c, 0, index);
    for (int j = 1; j < c.world; ++j) acc = combine(c.redop, acc, reduce_input(c, j, index));
    if (c.redop == CB_REDOP_AVG) {  // the exact sum, divided with the SDK's own rounding
      unsigned char tmp[8];
      sdk::store_from_double(c.dtype, tmp, 0, acc);
      sdk::reduce_finish_avg(c.dtype, tmp, 1, c.world);
      acc = sdk::load_as_double(c.dtype, tmp, 0);
    }
    return acc;
  };
  const size_t block = i / c.count, k = i % c.count, mine = static_cast<size_t>(r) * c.count;
  switch (c.op) {
    case CB_OP_ALLREDUCE: return reduced(i);
    case CB_OP_REDUCE: return r == c.root ? std::optional(reduced(i)) : std::nullopt;
    case CB_OP_REDUCESCATTER: return reduced(mine + i);
    case CB_OP_ALLGATHER: return move_input(c, static_cast<int>(block), k);
    case CB_OP_GATHER: return r == c.root ? std::optional(move_input(c, static_cast<int>(block), k)) : std::nullopt;
    case CB_OP_BROADCAST: return move_input(c, c.root, i);
    case CB_OP_ALLTOALL: return move_input(c, static_cast<int>(block), mine + k);
    case CB_OP_SCATTER: return move_input(c, c.root, mine + i);
    default: return std::nullopt;
  }
}

constexpr size_t kGuard = 16;  // bytes before and after each buffer
constexpr unsigned char kUntouched = 0xEE;

bool in_place_at(const Case& c, int rank) { return c.mixed_placement ? rank % 2 == 1 : c.in_place; }

// One rank's buffers, laid out as the ABI's in-place rules say, between guard bytes.
struct RankBuffers {
  std::vector<unsigned char> first, second;  // out of place: send, recv; in place: one buffer
  void* send = nullptr;
  void* recv = nullptr;
  std::vector<unsigned char> send_copy;  // the input as filled, to check it is left alone

  RankBuffers(const Case& c, int rank) {
    const size_t es = sdk::dtype_size(c.dtype), se = send_elements(c) * es, re = recv_elements(c) * es;
    const size_t own_block = c.count * es * static_cast<size_t>(rank);
    if (in_place_at(c, rank)) {
      first.resize(std::max(se, re) + 2 * kGuard);
      send = recv = first.data() + kGuard;
      if (c.op == CB_OP_ALLGATHER || c.op == CB_OP_GATHER) send = first.data() + kGuard + own_block;
      if (c.op == CB_OP_REDUCESCATTER || c.op == CB_OP_SCATTER) recv = first.data() + kGuard + own_block;
    } else {
      first.resize(se + 2 * kGuard);
      second.resize(re + 2 * kGuard);
      send = first.data() + kGuard;
      recv = second.data() + kGuard;
    }
  }

  // Before each run: everything untouched, then the input.
  void fill(const Case& c, int rank) {
    std::fill(first.begin(), first.end(), kUntouched);
    std::fill(second.begin(), second.end(), kUntouched);
    for (size_t i = 0; i < send_elements(c); ++i) sdk::store_from_double(c.dtype, send, i, input(c, rank, i));
    const auto* p = static_cast<const unsigned char*>(send);
    send_copy.assign(p, p + send_elements(c) * sdk::dtype_size(c.dtype));
  }

  static bool guards_intact(const std::vector<unsigned char>& v) {
    if (v.empty()) return true;
    auto untouched = [](unsigned char b) { return b == kUntouched; };
    return std::all_of(v.begin(), v.begin() + kGuard, untouched) && std::all_of(v.end() - kGuard, v.end(), untouched);
  }
};

}  // namespace

// Runs the case twice in a row (the second reuses the scratch buffers and follows a collective
// of the same channel) on c.world threads, then checks everything the algorithm must respect.
void run_and_check(const Case& c) {
  SCOPED_TRACE(describe(c));
  const size_t es = sdk::dtype_size(c.dtype);
  MemoryFabric fabric(c.world, c.rendezvous);
  std::vector<RankBuffers> buffers;
  for (int r = 0; r < c.world; ++r) buffers.emplace_back(c, r);
  std::vector<std::string> errors(static_cast<size_t>(c.world));
  std::vector<std::thread> threads;
  for (int r = 0; r < c.world; ++r)
    threads.emplace_back([&, r] {
      RankBuffers& b = buffers[static_cast<size_t>(r)];
      try {
        MemoryChannel ch(fabric, r);
        Scratch scratch;
        const CollectiveArgs args{b.send, b.recv, c.count, c.dtype, c.redop, c.root};
        for (int repeat = 0; repeat < 2; ++repeat) {
          b.fill(c, r);  // only this thread touches rank r's buffers: sends are copied
          ch.begin();
          run_collective(ch, c.op, args, choice_for(c), scratch);
          ch.end();
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
        fabric.abort();  // the others fail at once instead of timing out
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < c.world; ++r) ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  const auto leftovers = fabric.leftovers();
  EXPECT_TRUE(leftovers.empty()) << "sent, never received: " << leftovers.front();

  int64_t wrong = 0;
  std::string first;
  auto report = [&](const std::string& what) {
    if (first.empty()) first = what;
    ++wrong;
  };
  for (int r = 0; r < c.world; ++r) {
    const RankBuffers& b = buffers[static_cast<size_t>(r)];
    for (size_t i = 0; i < recv_elements(c); ++i) {
      const auto want = expected(c, r, i);
      if (!want) continue;
      const double got = sdk::load_as_double(c.dtype, b.recv, i);
      if (got != *want) report(str("rank ", r, " element ", i, ": got ", got, ", want ", *want));
    }
    if (!RankBuffers::guards_intact(b.first) || !RankBuffers::guards_intact(b.second))
      report(str("rank ", r, ": wrote outside its buffers"));
    if (in_place_at(c, r)) continue;
    if (!b.send_copy.empty() && std::memcmp(b.send, b.send_copy.data(), b.send_copy.size()) != 0)
      report(str("rank ", r, ": the send buffer changed out of place"));
    const bool defined_here = (c.op != CB_OP_REDUCE && c.op != CB_OP_GATHER) || r == c.root;
    const auto* recv = static_cast<const unsigned char*>(b.recv);
    if (!defined_here && std::any_of(recv, recv + recv_elements(c) * es, [](unsigned char x) { return x != kUntouched; }))
      report(str("rank ", r, ": wrote the receive buffer of a non-root"));
  }
  EXPECT_EQ(wrong, 0) << first;
}

}  // namespace commbench::ucx_backend::test
