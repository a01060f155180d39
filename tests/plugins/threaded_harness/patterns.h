// Input patterns for the op cases and the results they must produce.
#pragma once

#include <cstddef>
#include <cstdint>

#include "commbench/backend.h"

namespace commbench::test {

// Element `index` of `rank`'s reduction input: 1, 2 or 3. Any sum/prod/min/max over up to
// 4 ranks stays an integer <= 81, exact in every reducible dtype (int8 and bf16 included).
double reduction_input(int rank, size_t index);

// The reduction of reduction_input(r, index) over ranks 0..world_size-1.
double expected_reduction(cb_redop redop, int world_size, size_t index);

// buffer[i] = reduction_input(rank, first_index + i) for i < count, stored as `dtype`.
void fill_reduction_input(cb_dtype dtype, void* buffer, size_t count, int rank, size_t first_index = 0);

// Byte `offset` of block `block` sent by `origin`: distinct per origin and block, so a
// misplaced block is caught. Used for data-movement ops, which must copy bytes exactly.
uint8_t movement_byte(int origin, size_t block, size_t offset);
void fill_movement(void* buffer, size_t bytes, int origin, size_t block);
// Index of the first byte that differs from the pattern, or `bytes` if none does.
size_t first_movement_mismatch(const void* buffer, size_t bytes, int origin, size_t block);

// Bytes written into buffers before an op, to detect writes the op must not make.
inline constexpr uint8_t kSentinel = 0xCD;

}  // namespace commbench::test
