#include "reduction.h"

#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"
#include "errors.h"

namespace commbench::gloo_backend {
namespace {

template <class T, cb_dtype D, cb_redop R>
void reduce_in_place(T* accumulator, const T* other, size_t n) {
  sdk::reduce(D, R, accumulator, accumulator, other, n, sdk::ReduceIsa::Baseline);
}

template <class T, cb_dtype D>
const gloo::ReductionFunction<T>* legacy_for_dtype(cb_redop redop) {
  // CUSTOM tells gloo not to substitute its own kernels for these.
  static const gloo::ReductionFunction<T> sum(gloo::CUSTOM, &reduce_in_place<T, D, CB_REDOP_SUM>);
  static const gloo::ReductionFunction<T> prod(gloo::CUSTOM, &reduce_in_place<T, D, CB_REDOP_PROD>);
  static const gloo::ReductionFunction<T> min(gloo::CUSTOM, &reduce_in_place<T, D, CB_REDOP_MIN>);
  static const gloo::ReductionFunction<T> max(gloo::CUSTOM, &reduce_in_place<T, D, CB_REDOP_MAX>);
  switch (redop) {
    case CB_REDOP_SUM: return &sum;
    case CB_REDOP_PROD: return &prod;
    case CB_REDOP_MIN: return &min;
    case CB_REDOP_MAX: return &max;
    default: break;
  }
  fail(CB_ERR_UNIMPLEMENTED, "reduction '" + std::string(sdk::redop_name(redop)) + "' has no gloo kernel");
}

[[noreturn]] void no_kernel(cb_dtype dtype) {
  fail(CB_ERR_UNIMPLEMENTED, "gloo cannot reduce dtype " + std::string(sdk::dtype_name(dtype)));
}

}  // namespace

gloo::AllreduceOptions::Func reduce_function(cb_dtype dtype, cb_redop redop) {
  return [dtype, redop](void* dst, const void* a, const void* b, size_t n) {
    sdk::reduce(dtype, redop, dst, a, b, n, sdk::ReduceIsa::Baseline);
  };
}

const gloo::ReductionFunction<uint8_t>* legacy_reduction(uint8_t, cb_dtype dtype, cb_redop redop) {
  switch (dtype) {
    case CB_DTYPE_INT8: return legacy_for_dtype<uint8_t, CB_DTYPE_INT8>(redop);
    case CB_DTYPE_UINT8: return legacy_for_dtype<uint8_t, CB_DTYPE_UINT8>(redop);
    default: no_kernel(dtype);
  }
}

const gloo::ReductionFunction<uint16_t>* legacy_reduction(uint16_t, cb_dtype dtype, cb_redop redop) {
  switch (dtype) {
    case CB_DTYPE_F16: return legacy_for_dtype<uint16_t, CB_DTYPE_F16>(redop);
    case CB_DTYPE_BF16: return legacy_for_dtype<uint16_t, CB_DTYPE_BF16>(redop);
    default: no_kernel(dtype);
  }
}

const gloo::ReductionFunction<uint32_t>* legacy_reduction(uint32_t, cb_dtype dtype, cb_redop redop) {
  switch (dtype) {
    case CB_DTYPE_INT32: return legacy_for_dtype<uint32_t, CB_DTYPE_INT32>(redop);
    case CB_DTYPE_UINT32: return legacy_for_dtype<uint32_t, CB_DTYPE_UINT32>(redop);
    case CB_DTYPE_F32: return legacy_for_dtype<uint32_t, CB_DTYPE_F32>(redop);
    default: no_kernel(dtype);
  }
}

const gloo::ReductionFunction<uint64_t>* legacy_reduction(uint64_t, cb_dtype dtype, cb_redop redop) {
  switch (dtype) {
    case CB_DTYPE_INT64: return legacy_for_dtype<uint64_t, CB_DTYPE_INT64>(redop);
    case CB_DTYPE_UINT64: return legacy_for_dtype<uint64_t, CB_DTYPE_UINT64>(redop);
    case CB_DTYPE_F64: return legacy_for_dtype<uint64_t, CB_DTYPE_F64>(redop);
    default: no_kernel(dtype);
  }
}

}  // namespace commbench::gloo_backend
