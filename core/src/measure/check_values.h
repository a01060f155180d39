// The values behind the result check (measure/check_pattern.h): what each rank contributes to a
// reduction, what the result must be, the bits a moved element carries, and the poison.
#pragma once

#include <cstdint>
#include <vector>

#include "commbench/backend.h"
#include "measure/check_pattern.h"

namespace commbench::check_values {

// SplitMix64's finaliser: a bijection on 64 bits, so distinct keys never share a stream.
uint64_t mix(uint64_t x);

// ---- reductions
struct Expected {
  double value = 0;
  double tolerance = 0;  // 0 = exact
};

// The inputs and results of one reduction case. Built once per check (it precomputes per-rank
// hash keys): the check of a large buffer costs a few hashes per element.
class ReducePattern {
 public:
  explicit ReducePattern(const CheckContext& c);
  // Rank r's input at global element index i (reducescatter: index into the count*n send buffer).
  double input(int r, uint64_t i) const;
  // The result at global element index i, and how far a correct backend may be from it.
  Expected expected(uint64_t i) const;

 private:
  uint64_t first_active(uint64_t i) const;  // the active ranks are first_active .. +active-1 (mod n)
  uint64_t element_hash(uint64_t i) const;
  double active_value(int r, int position, uint64_t element_hash) const;
  double identity() const;

  cb_dtype dtype_;
  cb_redop redop_;
  int world_;
  int active_;       // ranks with a non-identity value per element
  int64_t bound_;    // |value| of an active rank (sum/avg), the value range (min/max)
  int doublings_;    // prod: active ranks whose factor is +-2 (the others +-1)
  bool signed_, floating_;
  double inv_n_error_;  // |1/n rounded to the dtype - 1/n| (avg)
  uint64_t element_key_;
  std::vector<uint64_t> rank_keys_;
};

// ---- data movement and poison: raw element bits (the low dtype_size bytes)
// Key of the block that rank `src` sends; `dst` = the destination rank when each destination
// gets its own block (alltoall, scatter), -1 when every receiver gets the same data;
// `generation` = CheckContext::generation.
uint64_t moved_key(int src, int dst, uint32_t generation);
// Element i of that block: pseudo-random, a finite normal non-zero value for floating types,
// never the poison.
uint64_t moved_bits(cb_dtype d, uint64_t key, uint64_t i);
// Written over receive buffers before a checked iteration: NaN for floating types, the most
// negative value for signed integers, all ones for unsigned ones. No pattern produces it.
uint64_t poison_bits(cb_dtype d);

uint64_t load_bits(cb_dtype d, const void* buf, uint64_t i);
void store_bits(cb_dtype d, void* buf, uint64_t i, uint64_t bits);
// The bits as a number, for reports.
double bits_value(cb_dtype d, uint64_t bits);

}  // namespace commbench::check_values
