#include "patterns.h"

#include <algorithm>

#include "commbench/sdk/dtypes.hpp"

namespace commbench::test {

double reduction_input(int rank, size_t index) {
  return 1.0 + static_cast<double>((static_cast<size_t>(rank) + 2 * index) % 3);
}

double expected_reduction(cb_redop redop, int world_size, size_t index) {
  double result = reduction_input(0, index);
  for (int rank = 1; rank < world_size; ++rank) {
    const double value = reduction_input(rank, index);
    switch (redop) {
      case CB_REDOP_SUM: result += value; break;
      case CB_REDOP_PROD: result *= value; break;
      case CB_REDOP_MIN: result = std::min(result, value); break;
      case CB_REDOP_MAX: result = std::max(result, value); break;
      default: break;
    }
  }
  return result;
}

void fill_reduction_input(cb_dtype dtype, void* buffer, size_t count, int rank, size_t first_index) {
  for (size_t i = 0; i < count; ++i)
    sdk::store_from_double(dtype, buffer, i, reduction_input(rank, first_index + i));
}

uint8_t movement_byte(int origin, size_t block, size_t offset) {
  return static_cast<uint8_t>(origin * 37 + block * 11 + offset * 7 + 1);
}

void fill_movement(void* buffer, size_t bytes, int origin, size_t block) {
  auto* out = static_cast<uint8_t*>(buffer);
  for (size_t i = 0; i < bytes; ++i) out[i] = movement_byte(origin, block, i);
}

size_t first_movement_mismatch(const void* buffer, size_t bytes, int origin, size_t block) {
  const auto* in = static_cast<const uint8_t*>(buffer);
  for (size_t i = 0; i < bytes; ++i)
    if (in[i] != movement_byte(origin, block, i)) return i;
  return bytes;
}

}  // namespace commbench::test
