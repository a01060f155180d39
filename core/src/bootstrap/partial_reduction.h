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

#include "bootstrap/deadline.h"
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

// Folds `from` (another partial of the same slice) into `into`; a maximum is the larger of the two
// as std::max takes it (samples are times, never negative or NaN). "" when done; otherwise what is
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

// multi_get_each over `keys` in groups of at most `per_get`, so that no reply holds more than that
// many partials: a slice's partial may be 16 MiB, and the store refuses replies over its message
// limit (64 MiB by default), which 5 of them would pass. One deadline covers every group; a
// timeout names the missing keys of its group and of the groups not read yet.
inline void read_each(StoreClient& store, const std::vector<std::string>& keys, size_t per_get, Millis timeout,
                      const StoreClient::ValueSink& sink) {
  const auto deadline = Deadline::after(timeout);
  per_get = std::max<size_t>(1, per_get);
  for (size_t at = 0; at < keys.size(); at += per_get) {
    const size_t end = std::min(keys.size(), at + per_get);
    const std::vector<std::string> group(keys.begin() + static_cast<std::ptrdiff_t>(at),
                                         keys.begin() + static_cast<std::ptrdiff_t>(end));
    try {
      store.multi_get_each(group, Millis(deadline.remaining_ms()),
                           [&](size_t i, const uint8_t* data, size_t size) { sink(at + i, data, size); });
    } catch (const StoreError& e) {
      if (e.code() != StoreError::Code::Timeout || end == keys.size()) throw;
      std::vector<std::string> missing = e.missing_keys();
      for (size_t k = end; k < keys.size(); ++k)
        if (!store.check(keys[k])) missing.push_back(keys[k]);
      throw StoreError(e.code(), e.what(), std::move(missing));
    }
  }
}

// How many partials of `bytes` one reply may carry under `reply_budget`.
inline size_t per_reply(size_t reply_budget, size_t bytes) { return std::max<size_t>(1, reply_budget / std::max<size_t>(1, bytes)); }

}  // namespace partial
}  // namespace commbench
