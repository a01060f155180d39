#include "dtypes.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace simgpu {
namespace {

// ---- small floats ----------------------------------------------------------------------------------------
float half_to_float(uint16_t h) {
  _Float16 f;
  std::memcpy(&f, &h, 2);
  return static_cast<float>(f);
}
uint16_t float_to_half(float x) {
  _Float16 f = static_cast<_Float16>(x);  // round to nearest even
  uint16_t h;
  std::memcpy(&h, &f, 2);
  return h;
}
float bf16_to_float(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);  // round to nearest even
  return static_cast<uint16_t>(u >> 16);
}

// fp8: e4m3 is the "fn" variant (no infinities, 0x7f/0xff NaN, max 448); e5m2 is IEEE-like (max 57344).
// Conversions round to nearest even and saturate to the largest finite value.
struct Fp8Format {
  int mbits, bias;
  bool fn;  // e4m3fn
  float max;
};
constexpr Fp8Format kE4M3{3, 7, true, 448.0f};
constexpr Fp8Format kE5M2{2, 15, false, 57344.0f};

float fp8_to_float(uint8_t v, const Fp8Format& f) {
  const int ebits = 7 - f.mbits;
  const int sign = v >> 7, e = (v >> f.mbits) & ((1 << ebits) - 1), m = v & ((1 << f.mbits) - 1);
  float r;
  if (f.fn && e == 15 && m == 7) return NAN;
  if (!f.fn && e == 31) return m == 0 ? (sign ? -INFINITY : INFINITY) : NAN;
  if (e == 0)
    r = std::ldexp(static_cast<float>(m), 1 - f.bias - f.mbits);
  else
    r = std::ldexp(1.0f + static_cast<float>(m) / static_cast<float>(1 << f.mbits), e - f.bias);
  return sign ? -r : r;
}

uint8_t float_to_fp8(float x, const Fp8Format& f) {
  if (std::isnan(x)) return f.fn ? 0x7f : 0x7f;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0;
  float a = std::fabs(x);
  const int mmax = 1 << f.mbits;
  const int emin = 1 - f.bias;
  int efield, q;
  if (a < std::ldexp(1.0f, emin)) {
    q = static_cast<int>(std::nearbyint(std::ldexp(a, f.bias - 1 + f.mbits)));  // subnormal steps
    return static_cast<uint8_t>(sign | q);  // q == mmax becomes the smallest normal naturally
  }
  int ex;
  std::frexp(a, &ex);
  int e = ex - 1;
  float mant = std::ldexp(a, -e) - 1.0f;
  q = static_cast<int>(std::nearbyint(mant * static_cast<float>(mmax)));
  if (q == mmax) {
    q = 0;
    ++e;
  }
  efield = e + f.bias;
  const int emaxfield = f.fn ? 15 : 30;
  if (a >= f.max || efield > emaxfield || (f.fn && efield == 15 && q == 7)) {
    return static_cast<uint8_t>(sign | (f.fn ? 0x7e : 0x7b));  // saturate to the largest finite
  }
  return static_cast<uint8_t>(sign | (efield << f.mbits) | q);
}

// ---- element traits --------------------------------------------------------------------------------------
template <class T>
struct IntTraits {
  using Storage = T;
  static constexpr bool floating = false;
};
template <class S, float (*ToF)(S), S (*FromF)(float)>
struct SmallFloat {
  using Storage = S;
  static constexpr bool floating = true;
  static float load(S s) { return ToF(s); }
  static S store(float f) { return FromF(f); }
};
uint16_t f2h(float f) { return float_to_half(f); }
float h2f(uint16_t h) { return half_to_float(h); }
uint16_t f2b(float f) { return float_to_bf16(f); }
float b2f(uint16_t b) { return bf16_to_float(b); }
uint8_t f2e4(float f) { return float_to_fp8(f, kE4M3); }
float e42f(uint8_t v) { return fp8_to_float(v, kE4M3); }
uint8_t f2e5(float f) { return float_to_fp8(f, kE5M2); }
float e52f(uint8_t v) { return fp8_to_float(v, kE5M2); }

template <class T>
T int_apply(ncclRedOp_t op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case ncclProd: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));  // sum, avg
  }
}

template <class T>
void reduce_int(const Reduction& red, int n, T* out, const T* const* in, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    T acc = in[0][i];
    if (red.premul) acc = static_cast<T>(static_cast<double>(acc) * red.scalar);
    for (int r = 1; r < n; ++r) {
      T x = in[r][i];
      if (red.premul) x = static_cast<T>(static_cast<double>(x) * red.scalar);
      acc = int_apply(red.premul ? ncclSum : red.base, acc, x);
    }
    if (!red.premul && red.base == ncclAvg) acc = static_cast<T>(acc / static_cast<T>(n));
    out[i] = acc;
  }
}

template <class W>
W float_apply(ncclRedOp_t op, W a, W b) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return std::fmax(a, b);
    case ncclMin: return std::fmin(a, b);
    default: return a + b;
  }
}

// Native float/double.
template <class T>
void reduce_native(const Reduction& red, int n, T* out, const T* const* in, size_t count) {
  const bool pre = red.premul || red.base == ncclAvg;
  const T scale = red.premul ? static_cast<T>(red.scalar) : static_cast<T>(1.0 / n);
  const ncclRedOp_t op = pre ? ncclSum : red.base;
  for (size_t i = 0; i < count; ++i) {
    T acc = pre ? in[0][i] * scale : in[0][i];
    for (int r = 1; r < n; ++r) acc = float_apply<T>(op, acc, pre ? in[r][i] * scale : in[r][i]);
    out[i] = acc;
  }
}

// Small floats: every step is rounded back to the storage type, as NCCL's kernels do.
template <class Tr>
void reduce_small(const Reduction& red, int n, typename Tr::Storage* out, const typename Tr::Storage* const* in,
                  size_t count) {
  const bool pre = red.premul || red.base == ncclAvg;
  const float scale = Tr::load(Tr::store(red.premul ? static_cast<float>(red.scalar) : 1.0f / static_cast<float>(n)));
  const ncclRedOp_t op = pre ? ncclSum : red.base;
  auto input = [&](int r, size_t i) {
    float x = Tr::load(in[r][i]);
    return pre ? Tr::load(Tr::store(x * scale)) : x;
  };
  for (size_t i = 0; i < count; ++i) {
    float acc = input(0, i);
    for (int r = 1; r < n; ++r) acc = Tr::load(Tr::store(float_apply<float>(op, acc, input(r, i))));
    out[i] = Tr::store(acc);
  }
}

template <class T>
const T* const* cast_in(const void* const* in) {
  return reinterpret_cast<const T* const*>(in);
}

using Half = SmallFloat<uint16_t, h2f, f2h>;
using BF16 = SmallFloat<uint16_t, b2f, f2b>;
using E4M3 = SmallFloat<uint8_t, e42f, f2e4>;
using E5M2 = SmallFloat<uint8_t, e52f, f2e5>;

}  // namespace

size_t dtype_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
  }
}

bool dtype_valid(ncclDataType_t t) { return static_cast<int>(t) >= 0 && t < ncclNumTypes; }
bool dtype_is_fp8(ncclDataType_t t) { return t == ncclFloat8e4m3 || t == ncclFloat8e5m2; }

const char* dtype_name(ncclDataType_t t) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
                                "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return dtype_valid(t) ? names[t] : "invalid";
}

void reduce(ncclDataType_t t, const Reduction& red, int n, void* out, const void* const* in, size_t count) {
  switch (t) {
    case ncclInt8: return reduce_int(red, n, static_cast<int8_t*>(out), cast_in<int8_t>(in), count);
    case ncclUint8: return reduce_int(red, n, static_cast<uint8_t*>(out), cast_in<uint8_t>(in), count);
    case ncclInt32: return reduce_int(red, n, static_cast<int32_t*>(out), cast_in<int32_t>(in), count);
    case ncclUint32: return reduce_int(red, n, static_cast<uint32_t*>(out), cast_in<uint32_t>(in), count);
    case ncclInt64: return reduce_int(red, n, static_cast<int64_t*>(out), cast_in<int64_t>(in), count);
    case ncclUint64: return reduce_int(red, n, static_cast<uint64_t*>(out), cast_in<uint64_t>(in), count);
    case ncclFloat32: return reduce_native(red, n, static_cast<float*>(out), cast_in<float>(in), count);
    case ncclFloat64: return reduce_native(red, n, static_cast<double*>(out), cast_in<double>(in), count);
    case ncclFloat16: return reduce_small<Half>(red, n, static_cast<uint16_t*>(out), cast_in<uint16_t>(in), count);
    case ncclBfloat16: return reduce_small<BF16>(red, n, static_cast<uint16_t*>(out), cast_in<uint16_t>(in), count);
    case ncclFloat8e4m3: return reduce_small<E4M3>(red, n, static_cast<uint8_t*>(out), cast_in<uint8_t>(in), count);
    case ncclFloat8e5m2: return reduce_small<E5M2>(red, n, static_cast<uint8_t*>(out), cast_in<uint8_t>(in), count);
    default: return;
  }
}

double dtype_load(ncclDataType_t t, const void* p, size_t i) {
  switch (t) {
    case ncclInt8: return static_cast<const int8_t*>(p)[i];
    case ncclUint8: return static_cast<const uint8_t*>(p)[i];
    case ncclInt32: return static_cast<const int32_t*>(p)[i];
    case ncclUint32: return static_cast<const uint32_t*>(p)[i];
    case ncclInt64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case ncclUint64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case ncclFloat32: return static_cast<const float*>(p)[i];
    case ncclFloat64: return static_cast<const double*>(p)[i];
    case ncclFloat16: return half_to_float(static_cast<const uint16_t*>(p)[i]);
    case ncclBfloat16: return bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case ncclFloat8e4m3: return fp8_to_float(static_cast<const uint8_t*>(p)[i], kE4M3);
    case ncclFloat8e5m2: return fp8_to_float(static_cast<const uint8_t*>(p)[i], kE5M2);
    default: return 0;
  }
}

void dtype_store(ncclDataType_t t, void* p, size_t i, double v) {
  switch (t) {
    case ncclInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
    case ncclUint8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    case ncclInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
    case ncclUint32: static_cast<uint32_t*>(p)[i] = static_cast<uint32_t>(v); break;
    case ncclInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
    case ncclUint64: static_cast<uint64_t*>(p)[i] = static_cast<uint64_t>(v); break;
    case ncclFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case ncclFloat64: static_cast<double*>(p)[i] = v; break;
    case ncclFloat16: static_cast<uint16_t*>(p)[i] = float_to_half(static_cast<float>(v)); break;
    case ncclBfloat16: static_cast<uint16_t*>(p)[i] = float_to_bf16(static_cast<float>(v)); break;
    case ncclFloat8e4m3: static_cast<uint8_t*>(p)[i] = float_to_fp8(static_cast<float>(v), kE4M3); break;
    case ncclFloat8e5m2: static_cast<uint8_t*>(p)[i] = float_to_fp8(static_cast<float>(v), kE5M2); break;
    default: break;
  }
}

}  // namespace simgpu
