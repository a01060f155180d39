// Header-only helpers for the dtypes of the commbench ABI, shared by the core and by plugins.
// Not part of the ABI: a plugin may use it or not. C++20.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>

#include "commbench/backend.h"

namespace commbench::sdk {

// The integer an ABI enum field or argument holds, read as bytes, never as the enum: another
// binary (a newer host, a plugin) may pass a value this header does not know (op 63), and
// loading that as the enum type is undefined behaviour (UBSan: "load of value 63, which is not a
// valid value for type 'cb_op'"). Range-check this integer first; only a known value becomes
// the enum (abi_enum).
template <class E>
inline int32_t abi_value(const E& value) {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(int32_t), "ABI enums are 32-bit");
  int32_t raw = 0;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

// `raw` as the enum when it is one of the `count` values this header knows (0..count-1).
template <class E>
inline std::optional<E> abi_enum(int32_t raw, int32_t count) {
  if (raw < 0 || raw >= count) return std::nullopt;
  return static_cast<E>(raw);
}

inline constexpr std::string_view dtype_name(cb_dtype d) {
  switch (d) {
    case CB_DTYPE_INT8: return "int8";
    case CB_DTYPE_UINT8: return "uint8";
    case CB_DTYPE_INT32: return "int32";
    case CB_DTYPE_UINT32: return "uint32";
    case CB_DTYPE_INT64: return "int64";
    case CB_DTYPE_UINT64: return "uint64";
    case CB_DTYPE_F16: return "f16";
    case CB_DTYPE_BF16: return "bf16";
    case CB_DTYPE_F32: return "f32";
    case CB_DTYPE_F64: return "f64";
    case CB_DTYPE_F8E4M3: return "f8e4m3";
    case CB_DTYPE_F8E5M2: return "f8e5m2";
    default: return "?";
  }
}

inline constexpr size_t dtype_size(cb_dtype d) {
  switch (d) {
    case CB_DTYPE_INT8: case CB_DTYPE_UINT8: case CB_DTYPE_F8E4M3: case CB_DTYPE_F8E5M2: return 1;
    case CB_DTYPE_F16: case CB_DTYPE_BF16: return 2;
    case CB_DTYPE_INT32: case CB_DTYPE_UINT32: case CB_DTYPE_F32: return 4;
    case CB_DTYPE_INT64: case CB_DTYPE_UINT64: case CB_DTYPE_F64: return 8;
    default: return 0;
  }
}

inline constexpr std::string_view redop_name(cb_redop r) {
  switch (r) {
    case CB_REDOP_SUM: return "sum";
    case CB_REDOP_PROD: return "prod";
    case CB_REDOP_MIN: return "min";
    case CB_REDOP_MAX: return "max";
    case CB_REDOP_AVG: return "avg";
    default: return "?";
  }
}

inline constexpr std::string_view mem_name(cb_mem m) {
  switch (m) {
    case CB_MEM_HOST: return "host";
    case CB_MEM_HOST_PINNED: return "host_pinned";
    case CB_MEM_CUDA: return "cuda";
    default: return "?";
  }
}

inline constexpr std::string_view op_name(cb_op o) {
  switch (o) {
    case CB_OP_ALLREDUCE: return "allreduce";
    case CB_OP_ALLGATHER: return "allgather";
    case CB_OP_REDUCESCATTER: return "reducescatter";
    case CB_OP_BROADCAST: return "broadcast";
    case CB_OP_REDUCE: return "reduce";
    case CB_OP_ALLTOALL: return "alltoall";
    case CB_OP_GATHER: return "gather";
    case CB_OP_SCATTER: return "scatter";
    case CB_OP_BARRIER: return "barrier";
    case CB_OP_SEND: return "send";
    case CB_OP_RECV: return "recv";
    default: return "?";
  }
}

template <class E, int N>
inline std::optional<E> parse_enum(std::string_view s, std::string_view (*name)(E)) {
  for (int i = 0; i < N; ++i)
    if (name(static_cast<E>(i)) == s) return static_cast<E>(i);
  return std::nullopt;
}
inline std::optional<cb_dtype> parse_dtype(std::string_view s) {
  return parse_enum<cb_dtype, CB_DTYPE_COUNT_V1>(s, +[](cb_dtype d) { return dtype_name(d); });
}
inline std::optional<cb_redop> parse_redop(std::string_view s) {
  return parse_enum<cb_redop, CB_REDOP_COUNT_V1>(s, +[](cb_redop r) { return redop_name(r); });
}
inline std::optional<cb_mem> parse_mem(std::string_view s) {
  return parse_enum<cb_mem, CB_MEM_COUNT_V1>(s, +[](cb_mem m) { return mem_name(m); });
}
inline std::optional<cb_op> parse_op(std::string_view s) {
  return parse_enum<cb_op, CB_OP_COUNT_V1>(s, +[](cb_op o) { return op_name(o); });
}

inline constexpr bool is_reduction(cb_op o) {
  return o == CB_OP_ALLREDUCE || o == CB_OP_REDUCESCATTER || o == CB_OP_REDUCE;
}

// ---------------------------------------------------------------- narrow float formats
// Round-to-nearest-even conversions. Values outside a format's range saturate to its max
// (fp8 e4m3 has no infinity) or become infinity (f16, bf16, e5m2).

namespace detail {
// Generic encoder for a binary float with `E` exponent bits and `M` mantissa bits.
template <int E, int M, bool kFiniteOnly>
inline uint32_t encode_small(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (bits >> 31) << (E + M);
  const int bias = (1 << (E - 1)) - 1;
  // Largest finite magnitude: e4m3fn uses exponent all-ones with mantissa != all-ones.
  const uint32_t max_finite = kFiniteOnly ? ((((1u << E) - 1) << M) | ((1u << M) - 2))
                                          : ((((1u << E) - 2) << M) | ((1u << M) - 1));
  if (std::isnan(f)) return sign | (kFiniteOnly ? (((1u << E) - 1) << M) | ((1u << M) - 1)
                                                : (((1u << E) - 1) << M) | (1u << (M - 1)));
  float a = std::fabs(f);
  if (a == 0.0f) return sign;
  int exp;
  float frac = std::frexp(a, &exp);  // a = frac * 2^exp, frac in [0.5, 1)
  int e = exp - 1 + bias;            // biased exponent for 1.xxx form
  uint32_t out;
  if (e <= 0) {                      // subnormal in the target format
    float scaled = std::ldexp(a, bias - 1 + M);  // units of the smallest subnormal
    float r = std::nearbyint(scaled);
    out = static_cast<uint32_t>(r);  // may round up into the smallest normal: still correct
  } else {
    float mant = std::ldexp(frac * 2.0f - 1.0f, M);  // in [0, 2^M)
    float r = std::nearbyint(mant);
    uint32_t m = static_cast<uint32_t>(r);
    if (m == (1u << M)) { m = 0; ++e; }
    out = (static_cast<uint32_t>(e) << M) | m;
  }
  if (out > max_finite) {
    if (kFiniteOnly) out = max_finite;
    else out = ((1u << E) - 1) << M;  // infinity
  }
  return sign | out;
}

template <int E, int M, bool kFiniteOnly>
inline float decode_small(uint32_t v) {
  const int bias = (1 << (E - 1)) - 1;
  const bool neg = (v >> (E + M)) & 1u;
  const uint32_t e = (v >> M) & ((1u << E) - 1);
  const uint32_t m = v & ((1u << M) - 1);
  float out;
  if (e == 0) {
    out = std::ldexp(static_cast<float>(m), 1 - bias - M);
  } else if (e == (1u << E) - 1 && (!kFiniteOnly || m == (1u << M) - 1)) {
    out = (kFiniteOnly || m != 0) ? NAN : INFINITY;
  } else {
    out = std::ldexp(1.0f + static_cast<float>(m) / static_cast<float>(1u << M),
                     static_cast<int>(e) - bias);
  }
  return neg ? -out : out;
}
}  // namespace detail

inline uint16_t f32_to_f16(float f) { return static_cast<uint16_t>(detail::encode_small<5, 10, false>(f)); }
inline float f16_to_f32(uint16_t h) { return detail::decode_small<5, 10, false>(h); }
inline uint8_t f32_to_f8e4m3(float f) { return static_cast<uint8_t>(detail::encode_small<4, 3, true>(f)); }
inline float f8e4m3_to_f32(uint8_t v) { return detail::decode_small<4, 3, true>(v); }
inline uint8_t f32_to_f8e5m2(float f) { return static_cast<uint8_t>(detail::encode_small<5, 2, false>(f)); }
inline float f8e5m2_to_f32(uint8_t v) { return detail::decode_small<5, 2, false>(v); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}
inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

// Element i of a buffer of dtype d, as a double (exact for every format here except large 64-bit ints).
inline double load_as_double(cb_dtype d, const void* buf, size_t i) {
  const auto* p = static_cast<const unsigned char*>(buf);
  switch (d) {
    case CB_DTYPE_INT8: return reinterpret_cast<const int8_t*>(p)[i];
    case CB_DTYPE_UINT8: return p[i];
    case CB_DTYPE_INT32: return reinterpret_cast<const int32_t*>(p)[i];
    case CB_DTYPE_UINT32: return reinterpret_cast<const uint32_t*>(p)[i];
    case CB_DTYPE_INT64: return static_cast<double>(reinterpret_cast<const int64_t*>(p)[i]);
    case CB_DTYPE_UINT64: return static_cast<double>(reinterpret_cast<const uint64_t*>(p)[i]);
    case CB_DTYPE_F16: return f16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
    case CB_DTYPE_BF16: return bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
    case CB_DTYPE_F32: return reinterpret_cast<const float*>(p)[i];
    case CB_DTYPE_F64: return reinterpret_cast<const double*>(p)[i];
    case CB_DTYPE_F8E4M3: return f8e4m3_to_f32(p[i]);
    case CB_DTYPE_F8E5M2: return f8e5m2_to_f32(p[i]);
    default: return NAN;
  }
}

// Store v (already representable, or rounded to nearest) as element i of a dtype-d buffer.
inline void store_from_double(cb_dtype d, void* buf, size_t i, double v) {
  auto* p = static_cast<unsigned char*>(buf);
  switch (d) {
    case CB_DTYPE_INT8: reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case CB_DTYPE_UINT8: p[i] = static_cast<uint8_t>(v); break;
    case CB_DTYPE_INT32: reinterpret_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case CB_DTYPE_UINT32: reinterpret_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case CB_DTYPE_INT64: reinterpret_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case CB_DTYPE_UINT64: reinterpret_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case CB_DTYPE_F16: reinterpret_cast<uint16_t*>(p)[i] = f32_to_f16(static_cast<float>(v)); break;
    case CB_DTYPE_BF16: reinterpret_cast<uint16_t*>(p)[i] = f32_to_bf16(static_cast<float>(v)); break;
    case CB_DTYPE_F32: reinterpret_cast<float*>(p)[i] = static_cast<float>(v); break;
    case CB_DTYPE_F64: reinterpret_cast<double*>(p)[i] = v; break;
    case CB_DTYPE_F8E4M3: p[i] = f32_to_f8e4m3(static_cast<float>(v)); break;
    case CB_DTYPE_F8E5M2: p[i] = f32_to_f8e5m2(static_cast<float>(v)); break;
    default: break;
  }
}

// Largest N such that every integer in [-N, N] (or [0, N] unsigned) is exact in dtype d.
inline constexpr double max_exact_integer(cb_dtype d) {
  switch (d) {
    case CB_DTYPE_INT8: return 127;
    case CB_DTYPE_UINT8: return 255;
    case CB_DTYPE_F8E4M3: return 16;
    case CB_DTYPE_F8E5M2: return 8;
    case CB_DTYPE_BF16: return 256;
    case CB_DTYPE_F16: return 2048;
    default: return 1 << 24;  // f32 and all wider types: plenty for check patterns
  }
}

}  // namespace commbench::sdk

// Host reductions (sdk::reduce) live in host_reduce.hpp since 2026-11-29. Included here so that
// a plugin written against this header alone still compiles; new code includes host_reduce.hpp.
#include "commbench/sdk/host_reduce.hpp"
