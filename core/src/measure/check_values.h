// The values behind the result check (measure/check_pattern.h): what each rank contributes to a
// reduction, what the result must be, the bits a moved element carries, and the poison.
#pragma once

#include <cstdint>

#include "commbench/backend.h"
#include "measure/check_pattern.h"

namespace commbench::check {

// SplitMix64's finaliser: a bijection on 64 bits, so distinct keys never share a stream.
uint64_t mix(uint64_t x);

// ---- reductions
// Rank r's input at global element index i (reducescatter: index into the count*n send buffer).
double reduce_input(const CheckContext& c, int r, uint64_t i);

struct Expected {
  double value = 0;
  double tolerance = 0;  // 0 = exact
};
// The result at global element index i, and how far a correct backend may be from it.
Expected reduce_expected(const CheckContext& c, uint64_t i);

// ---- data movement and poison: raw element bits (the low dtype_size bytes)
// Key of the block that rank `src` sends; `dst` = the destination rank when each destination
// gets its own block (alltoall, scatter), -1 when every receiver gets the same data.
uint64_t moved_key(int src, int dst);
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

}  // namespace commbench::check
