// Elementwise reductions handed to gloo, for every reducible dtype × {sum, prod, min, max}.
// Both flavours compute with commbench::sdk::reduce, so f16/bf16 (which gloo's own templates
// do not cover) reduce exactly like the core's reference check expects. They use the baseline
// ISA (SSE2 on x86-64 unless built for more), not AVX2 chosen at run time: gloo::sum<T> compiled
// into a Release build of a Gloo user is such a loop, and a faster kernel here would report a
// faster Gloo than its users run.
#pragma once

#include <cstdint>

#include <gloo/algorithm.h>
#include <gloo/allreduce.h>

#include "commbench/backend.h"

namespace commbench::gloo_backend {

// For the new-style API (gloo::allreduce, gloo::reduce): dst = a op b over n elements.
gloo::AllreduceOptions::Func reduce_function(cb_dtype dtype, cb_redop redop);

// For the old-style algorithm classes, which are templated on the element type T and take a
// plain function pointer. T is only the storage type (uint8/16/32/64_t of the dtype's size);
// the returned object knows the real dtype. Static lifetime. Pick the overload with T{}.
const gloo::ReductionFunction<uint8_t>* legacy_reduction(uint8_t, cb_dtype dtype, cb_redop redop);
const gloo::ReductionFunction<uint16_t>* legacy_reduction(uint16_t, cb_dtype dtype, cb_redop redop);
const gloo::ReductionFunction<uint32_t>* legacy_reduction(uint32_t, cb_dtype dtype, cb_redop redop);
const gloo::ReductionFunction<uint64_t>* legacy_reduction(uint64_t, cb_dtype dtype, cb_redop redop);

// Calls f(T{}) with T the unsigned integer type of `element_size` bytes (1, 2, 4 or 8).
template <class F>
decltype(auto) with_storage_type(size_t element_size, F&& f) {
  switch (element_size) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    default: return f(uint64_t{});
  }
}

}  // namespace commbench::gloo_backend
