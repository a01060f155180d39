#include "measure/check_pattern.h"

#include <algorithm>
#include <cmath>

#include "commbench/sdk/dtypes.hpp"

namespace commbench {
namespace {

// Values for data movement: distinct per (source rank, index) within the dtype's exact range,
// so a block delivered to the wrong place or from the wrong rank is caught.
double move_value(const CheckContext& c, int src, uint64_t i) {
  const uint64_t m = static_cast<uint64_t>(std::min(sdk::max_exact_integer(c.dtype), 120.0));
  return static_cast<double>((static_cast<uint64_t>(src) * 31u + i * 7u + 1u) % m);
}

// Largest per-rank value m-1 so that n contributions stay exact.
uint64_t reduce_modulus(const CheckContext& c) {
  const double limit = sdk::max_exact_integer(c.dtype) / std::max(1, c.world);
  return static_cast<uint64_t>(std::clamp(limit, 1.0, 8.0));
}

// Contribution of rank r at global element index i for reductions.
double reduce_input(const CheckContext& c, int r, uint64_t i) {
  const uint64_t m = reduce_modulus(c);
  switch (c.redop) {
    case CB_REDOP_PROD:
      // Exactly one rank contributes 2 to each element: the product is 2 if every rank took part.
      return (i % static_cast<uint64_t>(c.world)) == static_cast<uint64_t>(r) ? 2.0 : 1.0;
    case CB_REDOP_AVG:
      // Sum is world * ((i % m) + 1) so the average is exact.
      return static_cast<double>(i % m) +
             ((i % static_cast<uint64_t>(c.world)) == static_cast<uint64_t>(r) ? c.world : 0);
    case CB_REDOP_MIN:
    case CB_REDOP_MAX:
      return static_cast<double>((static_cast<uint64_t>(r) * 3u + i) % (m + 1));
    default:
      return static_cast<double>((static_cast<uint64_t>(r) + i) % m);
  }
}

double reduce_expected(const CheckContext& c, uint64_t i) {
  double acc = reduce_input(c, 0, i);
  for (int r = 1; r < c.world; ++r) {
    const double v = reduce_input(c, r, i);
    switch (c.redop) {
      case CB_REDOP_PROD: acc *= v; break;
      case CB_REDOP_MIN: acc = std::min(acc, v); break;
      case CB_REDOP_MAX: acc = std::max(acc, v); break;
      default: acc += v; break;
    }
  }
  if (c.redop == CB_REDOP_AVG) acc /= c.world;
  return acc;
}

// Mantissa bits of the floating dtypes; 0 for integers (compared exactly).
int mantissa_bits(cb_dtype d) {
  switch (d) {
    case CB_DTYPE_F64: return 52;
    case CB_DTYPE_F32: return 23;
    case CB_DTYPE_F16: return 10;
    case CB_DTYPE_BF16: return 7;
    case CB_DTYPE_F8E4M3: return 3;
    case CB_DTYPE_F8E5M2: return 2;
    default: return 0;
  }
}

// How far a result may be from the exact one. Exact everywhere but `avg` on floating types:
// NCCL computes it as a pre-multiplied sum (each input times 1/n, then summed), which rounds at
// every step. As nccl-tests, 2 ulp of the result for f32/f64; narrow formats round once per rank.
double tolerance(const CheckContext& c, double expected) {
  const int bits = mantissa_bits(c.dtype);
  if (c.redop != CB_REDOP_AVG || bits == 0 || !op_info(c.op).reduction) return 0;
  const double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(expected), 1.0)) - bits);
  const int ulps = bits >= 23 ? 2 : std::max(2, c.world);
  return ulps * ulp;
}

}  // namespace

void fill_send(const CheckContext& c, void* send, uint64_t send_elems) {
  const OpInfo& info = op_info(c.op);
  for (uint64_t i = 0; i < send_elems; ++i) {
    double v;
    if (info.reduction) {
      v = reduce_input(c, c.rank, i);
    } else if (c.op == OpKind::Alltoall || c.op == OpKind::Scatter) {
      // Block j is destined for rank j: encode the destination too.
      const uint64_t j = i / std::max<uint64_t>(c.count, 1), k = i % std::max<uint64_t>(c.count, 1);
      v = move_value(c, c.rank * c.world + static_cast<int>(j), k);
    } else {
      v = move_value(c, c.rank, i);
    }
    sdk::store_from_double(c.dtype, send, i, v);
  }
}

int64_t count_wrong(const CheckContext& c, const void* recv, uint64_t recv_elems) {
  (void)recv_elems;
  const uint64_t n = c.count;
  int64_t wrong = 0;
  auto each = [&](uint64_t offset, auto&& expected) {
    for (uint64_t i = 0; i < n; ++i) {
      const double want = expected(i), got = sdk::load_as_double(c.dtype, recv, offset + i);
      if (got != want && !(std::fabs(got - want) <= tolerance(c, want))) ++wrong;
    }
  };
  switch (c.op) {
    case OpKind::Allreduce:
      each(0, [&](uint64_t i) { return reduce_expected(c, i); });
      break;
    case OpKind::Reduce:
      if (c.rank == c.root) each(0, [&](uint64_t i) { return reduce_expected(c, i); });
      break;
    case OpKind::Reducescatter:
      each(0, [&](uint64_t i) { return reduce_expected(c, static_cast<uint64_t>(c.rank) * n + i); });
      break;
    case OpKind::Allgather:
      for (int b = 0; b < c.world; ++b)
        each(static_cast<uint64_t>(b) * n, [&](uint64_t i) { return move_value(c, b, i); });
      break;
    case OpKind::Gather:
      if (c.rank == c.root)
        for (int b = 0; b < c.world; ++b)
          each(static_cast<uint64_t>(b) * n, [&](uint64_t i) { return move_value(c, b, i); });
      break;
    case OpKind::Broadcast:
      each(0, [&](uint64_t i) { return move_value(c, c.root, i); });
      break;
    case OpKind::Alltoall:
      for (int b = 0; b < c.world; ++b)
        each(static_cast<uint64_t>(b) * n,
             [&](uint64_t i) { return move_value(c, b * c.world + c.rank, i); });
      break;
    case OpKind::Scatter:
      each(0, [&](uint64_t i) { return move_value(c, c.root * c.world + c.rank, i); });
      break;
    case OpKind::PingPong:
    case OpKind::UnidirBw:
      // The second peer receives the first peer's data (pingpong's reply is checked the same way).
      if (c.rank == c.peers[1]) each(0, [&](uint64_t i) { return move_value(c, c.peers[0], i); });
      else if (c.op == OpKind::PingPong && c.rank == c.peers[0])
        each(0, [&](uint64_t i) { return move_value(c, c.peers[1], i); });
      break;
    case OpKind::SendRecvRing: {
      const int prev = (c.rank + c.world - 1) % c.world;
      each(0, [&](uint64_t i) { return move_value(c, prev, i); });
      break;
    }
    case OpKind::BidirBw:
      if (c.rank == c.peers[0] || c.rank == c.peers[1]) {
        const int other = c.rank == c.peers[0] ? c.peers[1] : c.peers[0];
        each(0, [&](uint64_t i) { return move_value(c, other, i); });
      }
      break;
    case OpKind::MsgRate: {
      // Ranks n/2 .. 2*(n/2)-1 receive from their partner in the first half.
      const int pairs = msg_rate_pairs(c.world);
      if (c.rank >= pairs && c.rank < 2 * pairs)
        each(0, [&](uint64_t i) { return move_value(c, c.rank - pairs, i); });
      break;
    }
    case OpKind::AllPairs:  // checked by the all-pairs driver (measure/all_pairs.h)
    case OpKind::Barrier:
      break;
  }
  return wrong;
}

}  // namespace commbench
