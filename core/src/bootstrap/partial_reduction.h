// What a bootstrap reduction (Bootstrap::reduce_to_rank0) carries between ranks: a partial result
// that knows how many ranks it already covers, so that rank 0 can tell a whole result from one a
// rank is missing from, and the caller's total count, so that ranks that passed different counts
// fail instead of being combined at the wrong stride. Layout: u32 ranks covered, u32 zero,
// u64 total count, then this slice's doubles (host order; a job's hosts share one architecture).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bootstrap/store.h"

namespace commbench {

enum class ReduceOp : uint8_t { Sum, Max };

namespace partial {

constexpr size_t kHeader = 16;

inline Bytes make(uint32_t ranks, uint64_t total, const double* values, size_t count) {
  Bytes out(kHeader + count * sizeof(double));
  const uint32_t zero = 0;
  std::memcpy(out.data(), &ranks, 4);
  std::memcpy(out.data() + 4, &zero, 4);
  std::memcpy(out.data() + 8, &total, 8);
  if (count > 0) std::memcpy(out.data() + kHeader, values, count * sizeof(double));
  return out;
}

inline uint32_t ranks(const Bytes& p) {
  uint32_t n = 0;
  std::memcpy(&n, p.data(), 4);
  return n;
}

inline size_t count(const Bytes& p) { return (p.size() - kHeader) / sizeof(double); }

inline void values(const Bytes& p, double* out) {
  if (p.size() > kHeader) std::memcpy(out, p.data() + kHeader, p.size() - kHeader);
}

// Folds `from` (another partial of the same slice) into `into`. "" when done; otherwise what is
// wrong with `from`, for the caller to name its sender in the error it throws.
inline std::string absorb(Bytes& into, const uint8_t* from, size_t size, ReduceOp op) {
  uint64_t theirs = 0, ours = 0;
  uint32_t their_ranks = 0, our_ranks = 0;
  if (size < kHeader || (size - kHeader) % sizeof(double) != 0) return fmt::format("a malformed partial of {} bytes", size);
  std::memcpy(&their_ranks, from, 4);
  std::memcpy(&theirs, from + 8, 8);
  std::memcpy(&our_ranks, into.data(), 4);
  std::memcpy(&ours, into.data() + 8, 8);
  if (theirs != ours || size != into.size())
    return fmt::format("{} values (this slice: {}), where this rank passed {} (this slice: {}); every rank must "
                       "pass the same count",
                       theirs, (size - kHeader) / sizeof(double), ours, count(into));
  if (their_ranks == 0 || their_ranks > UINT32_MAX - our_ranks) return "a partial that covers no rank";
  our_ranks += their_ranks;
  std::memcpy(into.data(), &our_ranks, 4);
  const size_t n = count(into);
  uint8_t* a = into.data() + kHeader;
  const uint8_t* b = from + kHeader;
  for (size_t i = 0; i < n; ++i) {
    double x = 0, y = 0;
    std::memcpy(&x, a + i * sizeof(double), sizeof(double));
    std::memcpy(&y, b + i * sizeof(double), sizeof(double));
    x = op == ReduceOp::Max ? std::max(x, y) : x + y;
    std::memcpy(a + i * sizeof(double), &x, sizeof(double));
  }
  return "";
}

}  // namespace partial
}  // namespace commbench
