// Elementwise reductions on host memory, for plugins whose collectives reduce on the CPU: every
// dtype and reduce op of the ABI. Header-only, not part of the ABI. C++20.
//
// reduce(dtype, op, dst, a, b, n): dst[i] = op(a[i], b[i]) for n elements; dst may be a or b
// exactly (accumulate in place) or separate from both, never a partial overlap. AVG is not
// elementwise (it is SUM followed by a division by the rank count): finish it with
// reduce_finish_avg.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "commbench/backend.h"
#include "commbench/sdk/dtypes.hpp"

namespace commbench::sdk {

// Which vector instructions reduce() may use.
//   Widest: the widest this CPU runs that pays (x86-64: AVX2 when present, chosen once at run
//     time), for collectives the plugin implements itself (Open MPI's reductions use AVX too).
//   Baseline: what the compiler was told the target has (x86-64: SSE2, or AVX2 under -mavx2 /
//     -march=x86-64-v3), for a plugin that stands in for a library's own kernel: gloo::sum<T>
//     compiled into a Release build of a Gloo user is such a loop, and a faster kernel would
//     report a faster Gloo than its users run.
// Both are exact: the same element for element as the scalar op, whatever the ISA.
enum class ReduceIsa { Widest, Baseline };

namespace detail {

enum class Combine { Sum, Prod, Min, Max };

// The type a lane computes in: integer sums and products in the unsigned type of the same width,
// so that they wrap (defined behaviour, and what every integer unit does) instead of overflowing
// a signed type; min/max and floats in T itself.
template <Combine K, class T>
using LaneType = typename std::conditional_t<std::is_integral_v<T> && (K == Combine::Sum || K == Combine::Prod),
                                             std::make_unsigned<T>, std::type_identity<T>>::type;

template <Combine K, class T>
inline T combine_one(T x, T y) {
  using U = LaneType<K, T>;
  if constexpr (K == Combine::Sum) return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
  else if constexpr (K == Combine::Prod) return static_cast<T>(static_cast<U>(static_cast<U>(x) * static_cast<U>(y)));
  else if constexpr (K == Combine::Min) return y < x ? y : x;
  else return y > x ? y : x;
}

// W bytes at a time through GCC's vector extensions: one tight loop of unaligned loads and stores
// that GCC emits at -O2 and -O3 alike. (Left to the auto-vectoriser, a plain loop stays scalar at
// -O2, and the fixed-chunk loop this replaced became a nested loop at -O2 and twice as slow at
// -O3: docs/performance.md, "One reduction kernel at every -O".) Lanes compute what combine_one
// computes, bit for bit: NaN and signed zeros pick the same operand, integers wrap the same way.
#if defined(__GNUC__)
template <size_t W, Combine K, class T>
[[gnu::always_inline]] inline void combine_loop(T* dst, const T* a, const T* b, size_t n) {
  using U = LaneType<K, T>;
  typedef U V __attribute__((vector_size(W)));
  constexpr size_t kLanes = W / sizeof(T);
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    V x, y, r;
    std::memcpy(&x, a + i, W);
    std::memcpy(&y, b + i, W);
    if constexpr (K == Combine::Sum) r = x + y;
    else if constexpr (K == Combine::Prod) r = x * y;
    else if constexpr (K == Combine::Min) r = y < x ? y : x;
    else r = y > x ? y : x;
    std::memcpy(dst + i, &r, W);
  }
  for (; i < n; ++i) dst[i] = combine_one<K>(a[i], b[i]);
}
#else
template <size_t W, Combine K, class T>
inline void combine_loop(T* dst, const T* a, const T* b, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = combine_one<K>(a[i], b[i]);
}
#endif

// The baseline's vector width: what GCC's -O3 vectoriser uses for the same target (256 bits
// when AVX2 may be assumed, as it prefers 256 over 512 bits; else 128).
#if defined(__AVX2__)
inline constexpr size_t kBaselineVectorBytes = 32;
#else
inline constexpr size_t kBaselineVectorBytes = 16;
#endif

#if defined(__x86_64__) && defined(__GNUC__)
// 256-bit lanes. AVX-512 is left out: it ran only 5-10 % faster than AVX2 in cache here, and
// on many Xeons it lowers the core's clock for everything else, which glibc's memcpy avoids too.
template <Combine K, class T>
[[gnu::target("avx2")]] void combine_avx2(T* dst, const T* a, const T* b, size_t n) {
  combine_loop<32, K>(dst, a, b, n);
}
inline bool cpu_has_avx2() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
  }();
  return yes;
}
#endif

template <Combine K, class T>
inline void combine(T* dst, const T* a, const T* b, size_t n, ReduceIsa isa) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__AVX2__)
  if (isa == ReduceIsa::Widest && cpu_has_avx2()) return combine_avx2<K>(dst, a, b, n);
#else
  (void)isa;  // the baseline is already the widest this code takes
#endif
  combine_loop<kBaselineVectorBytes, K>(dst, a, b, n);
}

template <class T>
inline void reduce_typed(cb_redop op, T* dst, const T* a, const T* b, size_t n, ReduceIsa isa) {
  switch (op) {
    case CB_REDOP_SUM: case CB_REDOP_AVG: combine<Combine::Sum>(dst, a, b, n, isa); break;
    case CB_REDOP_PROD: combine<Combine::Prod>(dst, a, b, n, isa); break;
    case CB_REDOP_MIN: combine<Combine::Min>(dst, a, b, n, isa); break;
    case CB_REDOP_MAX: combine<Combine::Max>(dst, a, b, n, isa); break;
    default: break;
  }
}

// Narrow float formats (f16, bf16, fp8) reduce in f32 and round once per element.
template <typename Bits, float (*Load)(Bits), Bits (*Store)(float)>
inline void reduce_narrow_float(cb_redop op, Bits* dst, const Bits* a, const Bits* b, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    float x = Load(a[i]), y = Load(b[i]), r;
    switch (op) {
      case CB_REDOP_PROD: r = x * y; break;
      case CB_REDOP_MIN: r = y < x ? y : x; break;
      case CB_REDOP_MAX: r = y > x ? y : x; break;
      default: r = x + y; break;
    }
    dst[i] = Store(r);
  }
}
}  // namespace detail

// The loop reduce() runs for `isa` on this CPU, for the run's metadata: "avx2", "sse2", "neon"
// (aarch64), "generic vectors" (GCC's vectors on another target) or "scalar" (not GCC-compatible).
// Results from machines whose kernels differ are not comparable at sizes where the reduction is
// much of an op. The narrow float formats (f16, bf16, fp8) are scalar in all.
inline const char* reduce_kernel_name(ReduceIsa isa) {
#if !defined(__GNUC__)
  (void)isa;
  return "scalar";
#else
#if defined(__x86_64__) && !defined(__AVX2__)
  if (isa == ReduceIsa::Widest && detail::cpu_has_avx2()) return "avx2";
#else
  (void)isa;
#endif
#if defined(__AVX2__)
  return "avx2";
#elif defined(__x86_64__) || defined(__SSE2__)
  return "sse2";
#elif defined(__aarch64__)
  return "neon";
#else
  return "generic vectors";
#endif
#endif
}

inline void reduce(cb_dtype d, cb_redop op, void* dst, const void* a, const void* b, size_t n,
                   ReduceIsa isa = ReduceIsa::Widest) {
  using detail::reduce_typed;
  switch (d) {
    case CB_DTYPE_INT8: reduce_typed(op, (int8_t*)dst, (const int8_t*)a, (const int8_t*)b, n, isa); break;
    case CB_DTYPE_UINT8: reduce_typed(op, (uint8_t*)dst, (const uint8_t*)a, (const uint8_t*)b, n, isa); break;
    case CB_DTYPE_INT32: reduce_typed(op, (int32_t*)dst, (const int32_t*)a, (const int32_t*)b, n, isa); break;
    case CB_DTYPE_UINT32: reduce_typed(op, (uint32_t*)dst, (const uint32_t*)a, (const uint32_t*)b, n, isa); break;
    case CB_DTYPE_INT64: reduce_typed(op, (int64_t*)dst, (const int64_t*)a, (const int64_t*)b, n, isa); break;
    case CB_DTYPE_UINT64: reduce_typed(op, (uint64_t*)dst, (const uint64_t*)a, (const uint64_t*)b, n, isa); break;
    case CB_DTYPE_F32: reduce_typed(op, (float*)dst, (const float*)a, (const float*)b, n, isa); break;
    case CB_DTYPE_F64: reduce_typed(op, (double*)dst, (const double*)a, (const double*)b, n, isa); break;
    case CB_DTYPE_F16: detail::reduce_narrow_float<uint16_t, f16_to_f32, f32_to_f16>(op, (uint16_t*)dst, (const uint16_t*)a, (const uint16_t*)b, n); break;
    case CB_DTYPE_BF16: detail::reduce_narrow_float<uint16_t, bf16_to_f32, f32_to_bf16>(op, (uint16_t*)dst, (const uint16_t*)a, (const uint16_t*)b, n); break;
    case CB_DTYPE_F8E4M3: detail::reduce_narrow_float<uint8_t, f8e4m3_to_f32, f32_to_f8e4m3>(op, (uint8_t*)dst, (const uint8_t*)a, (const uint8_t*)b, n); break;
    case CB_DTYPE_F8E5M2: detail::reduce_narrow_float<uint8_t, f8e5m2_to_f32, f32_to_f8e5m2>(op, (uint8_t*)dst, (const uint8_t*)a, (const uint8_t*)b, n); break;
    default: break;
  }
}

// Final step of AVG: divide each element of a SUM result by `ranks` (integers truncate, as NCCL).
inline void reduce_finish_avg(cb_dtype d, void* buf, size_t n, int ranks) {
  for (size_t i = 0; i < n; ++i) store_from_double(d, buf, i, load_as_double(d, buf, i) / ranks);
}

}  // namespace commbench::sdk
