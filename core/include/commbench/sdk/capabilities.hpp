// Filling the caller's cb_capabilities per the ABI's struct_size rule. Header-only plugin SDK.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "commbench/backend.h"

namespace commbench::sdk {

// Bits 0..count-1: e.g. every op of ABI 1.0 is all_bits(CB_OP_COUNT_V1).
constexpr uint64_t all_bits(int count) { return (uint64_t{1} << count) - 1; }

// Writes `caps` into `out`, no further than the caller's struct_size reaches: a caller built
// against an older header passes a smaller struct and keeps its struct_size. A zero
// struct_size is taken as this header's size.
inline void write_capabilities(const cb_capabilities& caps, cb_capabilities* out) {
  if (out->struct_size == 0) {
    *out = caps;
    return;
  }
  const size_t size = std::min(out->struct_size, sizeof(cb_capabilities));
  const size_t caller_size = out->struct_size;
  std::memcpy(out, &caps, size);
  out->struct_size = caller_size;
}

}  // namespace commbench::sdk
