// The result check's patterns (issue 12 §5): reductions exact in any order for every dtype at
// large world sizes, prod not a constant, poison caught, root-only outputs left alone, moved data
// hashed so a misrouted or shifted block does not match. Each test reduces or moves the
// pattern the way a backend would (sdk::reduce, rounding per step) and asks check_recv.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"
#include "measure/check_pattern.h"

namespace commbench {
namespace {

using Bytes = std::vector<unsigned char>;

const cb_dtype kAllDtypes[] = {CB_DTYPE_INT8, CB_DTYPE_UINT8, CB_DTYPE_INT32, CB_DTYPE_UINT32,
                               CB_DTYPE_INT64, CB_DTYPE_UINT64, CB_DTYPE_F16, CB_DTYPE_BF16,
                               CB_DTYPE_F32, CB_DTYPE_F64, CB_DTYPE_F8E4M3, CB_DTYPE_F8E5M2};
const cb_redop kElementwise[] = {CB_REDOP_SUM, CB_REDOP_PROD, CB_REDOP_MIN, CB_REDOP_MAX};

CheckContext ctx(OpKind op, cb_dtype d, cb_redop redop, int rank, int world, uint64_t count) {
  return CheckContext{op, d, redop, rank, world, 0, count, {0, 1}};
}

Bytes input_of(CheckContext c, int rank) {
  c.rank = rank;
  const uint64_t n = send_elements(c.op, c.count, c.world);
  Bytes b(n * sdk::dtype_size(c.dtype));
  fill_send(c, b.data(), n);
  return b;
}

// Allreduce as a backend computes it: ranks combined in `order`, rounding to the dtype per step.
Bytes reduced(const CheckContext& c, const std::vector<int>& order, cb_redop op) {
  Bytes acc = input_of(c, order[0]);
  for (size_t k = 1; k < order.size(); ++k) {
    const Bytes in = input_of(c, order[k]);
    sdk::reduce(c.dtype, op, acc.data(), acc.data(), in.data(), c.count);
  }
  return acc;
}

std::vector<int> orders_of(int world, int which) {
  std::vector<int> o(static_cast<size_t>(world));
  std::iota(o.begin(), o.end(), 0);
  if (which == 1) std::reverse(o.begin(), o.end());
  if (which == 2) std::shuffle(o.begin(), o.end(), std::mt19937(static_cast<unsigned>(world)));
  return o;
}

TEST(CheckPattern, ReductionsAreExactInAnyOrderForEveryDtypeAtLargeWorlds) {
  for (cb_dtype d : kAllDtypes)
    for (cb_redop op : kElementwise)
      for (int world : {2, 5, 9, 64, 129, 1000}) {
        const CheckContext c = ctx(OpKind::Allreduce, d, op, 0, world, 96);
        for (int which = 0; which < 3; ++which) {
          const Bytes got = reduced(c, orders_of(world, which), op);
          const CheckResult r = check_recv(c, got.data(), c.count);
          EXPECT_EQ(r.wrong, 0) << sdk::dtype_name(d) << " " << sdk::redop_name(op) << " world "
                                << world << " order " << which;
        }
      }
}

TEST(CheckPattern, SumInputsDoNotDegenerateToZeros) {
  // The old pattern gave every rank 0 for fp8 at n >= 5/9, int8 at n >= 64, bf16 at n >= 129:
  // a backend that returned zeros passed. Now an all-zero result fails most elements.
  for (cb_dtype d : kAllDtypes)
    for (int world : {5, 9, 64, 129, 1000}) {
      const CheckContext c = ctx(OpKind::Allreduce, d, CB_REDOP_SUM, 0, world, 256);
      const Bytes zeros(c.count * sdk::dtype_size(d), 0);
      EXPECT_GT(check_recv(c, zeros.data(), c.count).wrong, static_cast<int64_t>(c.count / 2))
          << sdk::dtype_name(d) << " world " << world;
      // Every rank contributes somewhere: dropping one rank's input is caught.
      for (int dropped : {0, world / 2, world - 1}) {
        std::vector<int> order;
        for (int r = 0; r < world; ++r)
          if (r != dropped) order.push_back(r);
        const Bytes got = reduced(c, order, CB_REDOP_SUM);
        EXPECT_GT(check_recv(c, got.data(), c.count).wrong, 0)
            << sdk::dtype_name(d) << " world " << world << " without rank " << dropped;
      }
    }
}

TEST(CheckPattern, ProdIsNotCaughtOutByMax) {
  // The old pattern's product was always 2 (one rank gave 2, the others 1): MAX passed.
  for (cb_dtype d : kAllDtypes)
    for (int world : {2, 3, 8, 64}) {
      const CheckContext c = ctx(OpKind::Allreduce, d, CB_REDOP_PROD, 0, world, 64);
      const Bytes got = reduced(c, orders_of(world, 0), CB_REDOP_MAX);
      EXPECT_GT(check_recv(c, got.data(), c.count).wrong, static_cast<int64_t>(c.count / 4))
          << sdk::dtype_name(d) << " world " << world;
    }
}

TEST(CheckPattern, MinAndMaxAreToldApart) {
  for (cb_dtype d : kAllDtypes) {
    const CheckContext c = ctx(OpKind::Allreduce, d, CB_REDOP_MIN, 0, 4, 64);
    const Bytes got = reduced(c, orders_of(4, 0), CB_REDOP_MAX);
    EXPECT_GT(check_recv(c, got.data(), c.count).wrong, static_cast<int64_t>(c.count / 2)) << sdk::dtype_name(d);
  }
}

// Avg as NCCL computes it for floats: x * (1/n rounded to the dtype), rounded, summed in order.
Bytes premultiplied_avg(const CheckContext& c, const std::vector<int>& order) {
  const size_t es = sdk::dtype_size(c.dtype);
  Bytes acc(c.count * es), term(c.count * es), scalar(8);
  sdk::store_from_double(c.dtype, scalar.data(), 0, 1.0 / c.world);
  const double inv = sdk::load_as_double(c.dtype, scalar.data(), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const Bytes in = input_of(c, order[k]);
    for (uint64_t i = 0; i < c.count; ++i)
      sdk::store_from_double(c.dtype, term.data(), i, sdk::load_as_double(c.dtype, in.data(), i) * inv);
    if (k == 0) acc = term;
    else sdk::reduce(c.dtype, CB_REDOP_SUM, acc.data(), acc.data(), term.data(), c.count);
  }
  return acc;
}

TEST(CheckPattern, AvgAcceptsDivisionOnceAndPremultiplicationAndNothingFurther) {
  for (cb_dtype d : kAllDtypes)
    for (int world : {2, 3, 5, 9, 129}) {
      const CheckContext c = ctx(OpKind::Allreduce, d, CB_REDOP_AVG, 0, world, 128);
      Bytes divided = reduced(c, orders_of(world, 2), CB_REDOP_SUM);
      sdk::reduce_finish_avg(d, divided.data(), c.count, world);  // integers truncate
      EXPECT_EQ(check_recv(c, divided.data(), c.count).wrong, 0) << sdk::dtype_name(d) << " world " << world;
      const bool is_float = d == CB_DTYPE_F16 || d == CB_DTYPE_BF16 || d == CB_DTYPE_F32 ||
                            d == CB_DTYPE_F64 || d == CB_DTYPE_F8E4M3 || d == CB_DTYPE_F8E5M2;
      if (is_float) {
        const Bytes pre = premultiplied_avg(c, orders_of(world, 1));
        EXPECT_EQ(check_recv(c, pre.data(), c.count).wrong, 0) << sdk::dtype_name(d) << " world " << world;
      }
      // The sum, not divided: wrong wherever it is not tiny.
      const Bytes sum = reduced(c, orders_of(world, 0), CB_REDOP_SUM);
      EXPECT_GT(check_recv(c, sum.data(), c.count).wrong, static_cast<int64_t>(c.count / 2))
          << sdk::dtype_name(d) << " world " << world;
    }
}

TEST(CheckPattern, AvgRoundingTheWrongWayIsCaught) {
  // Integers truncate (the ABI); floats are not rounded to integers. The old pattern's sums were
  // multiples of n, so neither mistake showed.
  for (cb_dtype d : {CB_DTYPE_INT32, CB_DTYPE_INT8, CB_DTYPE_F32, CB_DTYPE_F64, CB_DTYPE_BF16, CB_DTYPE_F16}) {
    const CheckContext c = ctx(OpKind::Allreduce, d, CB_REDOP_AVG, 0, 3, 128);
    Bytes got = reduced(c, orders_of(3, 0), CB_REDOP_SUM);
    const bool integer = d == CB_DTYPE_INT32 || d == CB_DTYPE_INT8;
    for (uint64_t i = 0; i < c.count; ++i) {
      const double v = sdk::load_as_double(d, got.data(), i) / 3;
      sdk::store_from_double(d, got.data(), i, integer ? std::round(v) : std::trunc(v));
    }
    // Integers round differently only where the sum is 2 mod 3 (about a third of elements).
    EXPECT_GT(check_recv(c, got.data(), c.count).wrong, static_cast<int64_t>(c.count / 8)) << sdk::dtype_name(d);
  }
}

TEST(CheckPattern, PoisonedBuffersThatNobodyWroteAreWrong) {
  for (cb_dtype d : kAllDtypes)
    for (OpKind op : {OpKind::Allreduce, OpKind::Allgather, OpKind::Broadcast, OpKind::Alltoall}) {
      const CheckContext c = ctx(op, d, CB_REDOP_SUM, 1, 3, 32);
      const uint64_t n = recv_elements(op, c.count, c.world);
      Bytes recv(n * sdk::dtype_size(d));
      poison_recv(c, recv.data(), n);
      const CheckResult r = check_recv(c, recv.data(), n);
      EXPECT_EQ(r.wrong, static_cast<int64_t>(n)) << sdk::dtype_name(d) << " " << op_info(op).name;
      ASSERT_TRUE(r.first.has_value());
      EXPECT_EQ(r.first->index, 0u);
    }
  // Floating types are poisoned with NaN: the record's "got" says nothing was written.
  const CheckContext c = ctx(OpKind::Allreduce, CB_DTYPE_BF16, CB_REDOP_SUM, 0, 2, 4);
  Bytes recv(4 * 2);
  poison_recv(c, recv.data(), 4);
  EXPECT_TRUE(std::isnan(check_recv(c, recv.data(), 4).first->got));
}

TEST(CheckPattern, NonRootsOfReduceAndGatherMustBeLeftAlone) {
  for (OpKind op : {OpKind::Reduce, OpKind::Gather})
    for (bool in_place : {false, true}) {
      CheckContext c = ctx(op, CB_DTYPE_F32, CB_REDOP_SUM, 1, 3, 16);  // rank 1, root 0
      c.in_place = in_place;
      const uint64_t n = recv_elements(op, c.count, c.world);
      Bytes recv(n * 4);
      poison_recv(c, recv.data(), n);
      // In place the input sits in the receive buffer (gather: at the rank's block).
      const uint64_t at = in_place && op == OpKind::Gather ? c.rank * c.count : 0;
      if (in_place) fill_send(c, recv.data() + at * 4, c.count);
      EXPECT_EQ(check_recv(c, recv.data(), n).wrong, 0) << op_info(op).name << " in place " << in_place;
      // A backend that wrote the root's result there too (gather: block 0 is rank 0's data).
      const Bytes result = op == OpKind::Reduce
          ? reduced(ctx(OpKind::Allreduce, CB_DTYPE_F32, CB_REDOP_SUM, 0, 3, 16), {0, 1, 2}, CB_REDOP_SUM)
          : input_of(ctx(OpKind::Gather, CB_DTYPE_F32, CB_REDOP_SUM, 0, 3, 16), 0);
      std::copy(result.begin(), result.end(), recv.begin());
      EXPECT_GT(check_recv(c, recv.data(), n).wrong, 0) << op_info(op).name << " in place " << in_place;
    }
}

// A block shifted by k elements, or taken from another rank, must not match. The old values
// repeated every 120 elements (8 for fp8 e5m2) and across ranks 8 apart at fp8.
TEST(CheckPattern, MisroutedOrShiftedBlocksDoNotMatch) {
  for (cb_dtype d : kAllDtypes) {
    const int world = 12;
    const uint64_t count = 480;
    const CheckContext c = ctx(OpKind::Allgather, d, CB_REDOP_SUM, 0, world, count);
    const size_t es = sdk::dtype_size(d);
    Bytes right(count * world * es);
    for (int r = 0; r < world; ++r) {
      const Bytes in = input_of(c, r);
      std::copy(in.begin(), in.end(), right.begin() + static_cast<ptrdiff_t>(r * count * es));
    }
    ASSERT_EQ(check_recv(c, right.data(), count * world).wrong, 0) << sdk::dtype_name(d);
    for (uint64_t k : {1u, 8u, 16u, 120u, 128u, 240u}) {
      Bytes rotated = right;
      std::rotate(rotated.begin(), rotated.begin() + static_cast<ptrdiff_t>(k * es),
                  rotated.begin() + static_cast<ptrdiff_t>(count * es));  // block 0 shifted
      EXPECT_GT(check_recv(c, rotated.data(), count * world).wrong, static_cast<int64_t>(count * 9 / 10))
          << sdk::dtype_name(d) << " shifted by " << k;
    }
    Bytes swapped = right;  // blocks 0 and 8 exchanged
    std::swap_ranges(swapped.begin(), swapped.begin() + static_cast<ptrdiff_t>(count * es),
                     swapped.begin() + static_cast<ptrdiff_t>(8 * count * es));
    EXPECT_GT(check_recv(c, swapped.data(), count * world).wrong, static_cast<int64_t>(2 * count * 9 / 10))
        << sdk::dtype_name(d);
  }
}

TEST(CheckPattern, AlltoallAndScatterBlocksNameTheirDestination) {
  for (OpKind op : {OpKind::Alltoall, OpKind::Scatter}) {
    const int world = 4;
    const CheckContext c = ctx(op, CB_DTYPE_F8E5M2, CB_REDOP_SUM, 2, world, 64);
    // Rank 2 receives, from each source, the block meant for rank 3 instead.
    const uint64_t n = recv_elements(op, c.count, world);
    Bytes got(n);
    for (uint64_t b = 0; b < n / c.count; ++b) {
      const int src = op == OpKind::Scatter ? c.root : static_cast<int>(b);
      const Bytes in = input_of(c, src);
      std::copy_n(in.begin() + static_cast<ptrdiff_t>(3 * c.count), c.count, got.begin() + static_cast<ptrdiff_t>(b * c.count));
    }
    EXPECT_GT(check_recv(c, got.data(), n).wrong, static_cast<int64_t>(n * 9 / 10)) << op_info(op).name;
  }
}

// A plugin that writes one fixed byte just past its buffer (0x5A, a common fill value) wrote what
// the first generation's guard holds there, so that check cannot see it; the second check of the
// case (the next generation) holds another value at every offset and does.
TEST(CheckPattern, AFixedStrayByteIsCaughtByOneOfTwoGenerations) {
  Bytes first(kGuardBytes), second(kGuardBytes);
  fill_guard(first.data(), first.size(), 0);
  fill_guard(second.data(), second.size(), 1);
  for (size_t i = 0; i < kGuardBytes; ++i) ASSERT_NE(first[i], second[i]) << "offset " << i;
  for (const int value : {0x00, 0x5A, 0xA5, 0xFF}) {
    for (const size_t at : {size_t{0}, size_t{1}, kGuardBytes - 1}) {
      Bytes a = first, b = second;
      a[at] = static_cast<unsigned char>(value);
      b[at] = static_cast<unsigned char>(value);
      const int64_t seen = check_guard(a.data(), a.size(), 1, CheckedBuffer::kPastRecvEnd, 0).wrong +
                           check_guard(b.data(), b.size(), 1, CheckedBuffer::kPastRecvEnd, 1).wrong;
      EXPECT_GE(seen, 1) << "value " << value << " at " << at;
    }
  }
}

// Guards count elements away from the buffer: after it from its end, before it from its start.
TEST(CheckPattern, GuardMismatchesAreCountedFromTheBufferTheyTouch) {
  Bytes guard(kGuardBytes);
  fill_guard(guard.data(), guard.size(), 0);
  EXPECT_EQ(check_guard(guard.data(), guard.size(), 4, CheckedBuffer::kPastRecvEnd, 0).wrong, 0);
  Bytes touched = guard;
  touched[9] ^= 0xFF;                    // element 2 of 4 bytes from the start of the guard
  touched[kGuardBytes - 1] ^= 0xFF;      // the guard's last element
  const CheckResult after = check_guard(touched.data(), touched.size(), 4, CheckedBuffer::kPastRecvEnd, 0);
  EXPECT_EQ(after.wrong, 2);
  ASSERT_TRUE(after.first);
  EXPECT_EQ(after.first->index, 2u);     // past the end: the nearer one is the guard's start
  const CheckResult before = check_guard(touched.data(), touched.size(), 4, CheckedBuffer::kBeforeSendStart, 0);
  EXPECT_EQ(before.wrong, 2);
  ASSERT_TRUE(before.first);
  EXPECT_EQ(before.first->index, 0u);    // before the start: the guard's last element touches it
  EXPECT_EQ(before.first->buffer, CheckedBuffer::kBeforeSendStart);
  EXPECT_EQ(outside_text(checked_buffer_name(before.first->buffer), 0, "its"),
            "wrote before the start of its send buffer, element 0 before it");
  EXPECT_EQ(outside_text("past_recv_end", 2, "the"), "wrote past the end of the receive buffer, element 2 after it");
  EXPECT_EQ(outside_text("recv", 2, "the"), "");
}

// A later check of a case uses other inputs (CheckContext::generation): the result of the first
// must fail it almost everywhere, or a backend returning a cached result would pass. Each
// generation on its own stays exact.
TEST(CheckPattern, ALaterGenerationRejectsTheFirstGenerationsResult) {
  // Every redop too (the review: unsigned products were 2^doublings in every generation).
  for (cb_dtype d : kAllDtypes)
    for (cb_redop redop : kElementwise)
      for (int world : {2, 3, 9}) {
        CheckContext first = ctx(OpKind::Allreduce, d, redop, 0, world, 480);
        CheckContext later = first;
        later.generation = 1;
        const Bytes old_result = reduced(first, orders_of(world, 0), redop);
        const Bytes new_result = reduced(later, orders_of(world, 0), redop);
        ASSERT_EQ(check_recv(later, new_result.data(), 480).wrong, 0) << sdk::dtype_name(d);
        EXPECT_GT(check_recv(later, old_result.data(), 480).wrong, 480 / 5)
            << sdk::dtype_name(d) << " " << sdk::redop_name(redop) << " world " << world;
      }
  for (cb_dtype d : kAllDtypes) {
    for (OpKind op : {OpKind::Allreduce, OpKind::Allgather}) {
      const int world = 3;
      CheckContext first = ctx(op, d, CB_REDOP_SUM, 0, world, 480);
      CheckContext later = first;
      later.generation = 1;
      auto result_of = [&](const CheckContext& c) {
        if (op == OpKind::Allreduce) return reduced(c, orders_of(world, 0), CB_REDOP_SUM);
        Bytes all;
        for (int r = 0; r < world; ++r) {
          const Bytes in = input_of(c, r);
          all.insert(all.end(), in.begin(), in.end());
        }
        return all;
      };
      const uint64_t n = recv_elements(op, first.count, world);
      const Bytes old_result = result_of(first), new_result = result_of(later);
      ASSERT_EQ(check_recv(first, old_result.data(), n).wrong, 0) << sdk::dtype_name(d) << " " << op_info(op).name;
      ASSERT_EQ(check_recv(later, new_result.data(), n).wrong, 0) << sdk::dtype_name(d) << " " << op_info(op).name;
      // 8-bit sums have few distinct values: most elements still differ.
      EXPECT_GT(check_recv(later, old_result.data(), n).wrong, static_cast<int64_t>(n / 2))
          << sdk::dtype_name(d) << " " << op_info(op).name;
    }
  }
}

}  // namespace
}  // namespace commbench
