// NCCL data types and reductions, computed the way NCCL does: in rank order, rounding to the element
// type after every step; ncclAvg on floating types is a sum of inputs pre-multiplied by 1/n.
#pragma once

#include <nccl.h>

#include <cstddef>

namespace simgpu {

size_t dtype_size(ncclDataType_t t);
bool dtype_valid(ncclDataType_t t);
bool dtype_is_fp8(ncclDataType_t t);
const char* dtype_name(ncclDataType_t t);

// What a reduction applies to its inputs.
struct Reduction {
  ncclRedOp_t base = ncclSum;   // ncclSum/Prod/Max/Min, or ncclAvg
  bool premul = false;          // ncclRedOpCreatePreMulSum: multiply each input by `scalar` then sum
  double scalar = 1.0;
};

// out[i] = op over r in 0..n-1 of in[r][i], for `count` elements.
void reduce(ncclDataType_t t, const Reduction& red, int nranks, void* out, const void* const* in, size_t count);

// Conversions used by tests and the pre-multiplied scalar.
double dtype_load(ncclDataType_t t, const void* p, size_t i);
void dtype_store(ncclDataType_t t, void* p, size_t i, double v);

}  // namespace simgpu
