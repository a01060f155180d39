#include "measure/check_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "commbench/sdk/dtypes.hpp"

namespace commbench::check {
namespace {

// At most this many ranks contribute a non-neutral value to one element: the bound that keeps
// every partial result exact in the narrow formats, and the check O(count) at any world size.
// Which ranks they are rotates with the element (a hash), so every rank is checked somewhere.
constexpr int kMaxActive = 16;

// Stream tags: inputs of different reductions and moved data never share hash values.
constexpr uint64_t kTagActive = 0x61637469766531ull;
constexpr uint64_t kTagValue = 0x76616c75653131ull;
constexpr uint64_t kTagMoved = 0x6d6f76656431ull;

uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) { return mix(mix(mix(a) ^ b) ^ c); }

bool is_unsigned(cb_dtype d) {
  return d == CB_DTYPE_UINT8 || d == CB_DTYPE_UINT32 || d == CB_DTYPE_UINT64;
}

bool is_float(cb_dtype d) {
  switch (d) {
    case CB_DTYPE_F16: case CB_DTYPE_BF16: case CB_DTYPE_F32: case CB_DTYPE_F64:
    case CB_DTYPE_F8E4M3: case CB_DTYPE_F8E5M2: return true;
    default: return false;
  }
}

// Explicit mantissa bits and the smallest normal exponent of the floating types.
struct FloatFormat {
  int mantissa;
  int min_exp;
};
FloatFormat float_format(cb_dtype d) {
  switch (d) {
    case CB_DTYPE_F64: return {52, -1022};
    case CB_DTYPE_F32: return {23, -126};
    case CB_DTYPE_F16: return {10, -14};
    case CB_DTYPE_BF16: return {7, -126};
    case CB_DTYPE_F8E4M3: return {3, -6};
    case CB_DTYPE_F8E5M2: return {2, -14};
    default: return {0, 0};
  }
}

// Unit in the last place of x in dtype d, subnormals included.
double ulp(cb_dtype d, double x) {
  const FloatFormat f = float_format(d);
  const int e = x == 0 ? f.min_exp : std::max(std::ilogb(std::fabs(x)), f.min_exp);
  return std::ldexp(1.0, e - f.mantissa);
}

// x rounded to dtype d.
double rounded(cb_dtype d, double x) {
  unsigned char tmp[8];
  sdk::store_from_double(d, tmp, 0, x);
  return sdk::load_as_double(d, tmp, 0);
}

// Bound of the pattern's values: every integer in [-bound, bound] ([0, bound] unsigned) is exact,
// and the poison lies outside (uint8's 255 is its poison).
int64_t value_bound(cb_dtype d) {
  const auto e = static_cast<int64_t>(sdk::max_exact_integer(d));
  return d == CB_DTYPE_UINT8 ? e - 1 : e;
}

// The pattern's parameters for one case.
struct Shape {
  int active;      // ranks with a non-neutral value per element
  int64_t bound;   // |value| of an active rank (sum/avg), the value range (min/max)
  int doublings;   // prod: active ranks whose factor is +-2 (the others +-1)
};

Shape shape(const CheckContext& c) {
  const int64_t e = value_bound(c.dtype);
  const int n = std::max(1, c.world);
  Shape s{std::min(n, kMaxActive), e, 0};
  switch (c.redop) {
    case CB_REDOP_SUM:
    case CB_REDOP_AVG:
      // Any partial sum of `active` values of magnitude <= bound stays within [-e, e].
      s.active = static_cast<int>(std::clamp<int64_t>(e / 2, 1, s.active));
      s.bound = std::max<int64_t>(1, e / s.active);
      break;
    case CB_REDOP_PROD: {
      int bits = 0;
      while ((int64_t{2} << bits) <= e) ++bits;  // 2^bits <= e
      s.doublings = std::min(s.active, bits);
      break;
    }
    default:
      break;
  }
  return s;
}

// Where rank r stands among the active ranks of element i: 0..active-1, or -1 if inactive.
int active_position(const CheckContext& c, const Shape& s, int r, uint64_t i) {
  const auto n = static_cast<uint64_t>(std::max(1, c.world));
  const uint64_t start = mix(kTagActive ^ i ^ (static_cast<uint64_t>(c.redop) << 56)) % n;
  const uint64_t pos = (static_cast<uint64_t>(r) + n - start) % n;
  return pos < static_cast<uint64_t>(s.active) ? static_cast<int>(pos) : -1;
}

double input_with(const CheckContext& c, const Shape& s, int r, uint64_t i) {
  const bool is_signed = !is_unsigned(c.dtype);
  const int pos = active_position(c, s, r, i);
  const double lo = is_signed ? -static_cast<double>(s.bound) : 0.0, hi = static_cast<double>(s.bound);
  if (pos < 0) {  // the op's identity (neutral) value
    switch (c.redop) {
      case CB_REDOP_PROD: return 1;
      case CB_REDOP_MIN: return hi;
      case CB_REDOP_MAX: return lo;
      default: return 0;
    }
  }
  const uint64_t u = hash3(kTagValue ^ static_cast<uint64_t>(c.redop), static_cast<uint64_t>(r), i);
  const auto b = static_cast<uint64_t>(s.bound);
  switch (c.redop) {
    case CB_REDOP_PROD: {
      const double magnitude = pos < s.doublings ? 2 : 1;
      return is_signed && (u & 1) ? -magnitude : magnitude;
    }
    case CB_REDOP_MIN:
    case CB_REDOP_MAX:
      return lo + static_cast<double>(u % static_cast<uint64_t>(hi - lo + 1));
    default: {  // sum, avg: never 0, so a rank that contributes nothing is seen
      if (!is_signed) return static_cast<double>(u % b + 1);
      const uint64_t m = u % (2 * b);
      return m < b ? static_cast<double>(m + 1) : -static_cast<double>(m - b + 1);
    }
  }
}

}  // namespace

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

double reduce_input(const CheckContext& c, int r, uint64_t i) { return input_with(c, shape(c), r, i); }

Expected reduce_expected(const CheckContext& c, uint64_t i) {
  const Shape s = shape(c);
  const int n = std::max(1, c.world);
  // Only the active ranks matter: the others contribute the identity, exactly.
  double acc = c.redop == CB_REDOP_PROD ? 1 : c.redop == CB_REDOP_MIN ? HUGE_VAL
             : c.redop == CB_REDOP_MAX ? -HUGE_VAL : 0;
  double magnitudes = 0, scaled_rounding = 0;
  const double inv_n = 1.0 / n;
  const double inv_n_error = is_float(c.dtype) ? std::fabs(rounded(c.dtype, inv_n) - inv_n) : 0;
  const uint64_t start = mix(kTagActive ^ i ^ (static_cast<uint64_t>(c.redop) << 56)) % static_cast<uint64_t>(n);
  for (int p = 0; p < s.active; ++p) {
    const int r = static_cast<int>((start + static_cast<uint64_t>(p)) % static_cast<uint64_t>(n));
    const double v = input_with(c, s, r, i);
    switch (c.redop) {
      case CB_REDOP_PROD: acc *= v; break;
      case CB_REDOP_MIN: acc = std::min(acc, v); break;
      case CB_REDOP_MAX: acc = std::max(acc, v); break;
      default:
        acc += v;
        magnitudes += std::fabs(v);
        if (is_float(c.dtype))
          scaled_rounding += ulp(c.dtype, std::fabs(v) * inv_n) / 2 + std::fabs(v) * inv_n_error;
        break;
    }
  }
  const int active = s.active;
  // Min/max: inactive ranks hold the far end of the range, which an active rank may also hold.
  if (c.redop == CB_REDOP_MIN && s.active < n) acc = std::min(acc, static_cast<double>(s.bound));
  if (c.redop == CB_REDOP_MAX && s.active < n) acc = std::max(acc, is_unsigned(c.dtype) ? 0.0 : -static_cast<double>(s.bound));
  Expected out{acc, 0};
  if (c.redop != CB_REDOP_AVG || n == 1) return out;
  if (!is_float(c.dtype)) {
    out.value = std::trunc(acc / n);  // the ABI: integer averages truncate
    return out;
  }
  // Floating avg: a backend may divide the exact sum once, or (NCCL) multiply each input by
  // 1/n rounded to the dtype and add the products with a rounding per addition. The bound
  // covers the worst of those: the final rounding, each product's rounding and scalar error,
  // and one rounding of a partial sum per addition.
  out.value = acc / n;
  out.tolerance = ulp(c.dtype, out.value) / 2 + scaled_rounding +
                  (active - 1) * ulp(c.dtype, magnitudes * inv_n) / 2;
  return out;
}

uint64_t moved_key(int src, int dst) {
  return hash3(kTagMoved, static_cast<uint64_t>(static_cast<int64_t>(src)),
               static_cast<uint64_t>(static_cast<int64_t>(dst)));
}

uint64_t moved_bits(cb_dtype d, uint64_t key, uint64_t i) {
  const size_t bytes = sdk::dtype_size(d);
  const uint64_t mask = bytes >= 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
  const uint64_t poison = poison_bits(d);
  for (uint64_t salt = 0;; ++salt) {
    const uint64_t bits = mix(key ^ mix(i + (salt << 58))) & mask;
    if (bits == poison) continue;
    if (is_float(d)) {
      // Normal finite values only: a copy that flushes subnormals or canonicalises NaNs is
      // still a correct copy of the numbers.
      const double v = bits_value(d, bits);
      if (!std::isfinite(v) || std::fabs(v) < std::ldexp(1.0, float_format(d).min_exp)) continue;
    }
    return bits;
  }
}

uint64_t poison_bits(cb_dtype d) {
  const size_t bytes = sdk::dtype_size(d);
  const uint64_t ones = bytes >= 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
  if (is_float(d) || is_unsigned(d)) return ones;  // all ones: NaN, or the largest unsigned
  return 1ull << (8 * bytes - 1);                  // the most negative signed integer
}

uint64_t load_bits(cb_dtype d, const void* buf, uint64_t i) {
  const auto* p = static_cast<const unsigned char*>(buf);
  switch (sdk::dtype_size(d)) {
    case 1: return p[i];
    case 2: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case 4: { uint32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    default: { uint64_t v; std::memcpy(&v, p + 8 * i, 8); return v; }
  }
}

void store_bits(cb_dtype d, void* buf, uint64_t i, uint64_t bits) {
  auto* p = static_cast<unsigned char*>(buf);
  switch (sdk::dtype_size(d)) {
    case 1: p[i] = static_cast<uint8_t>(bits); break;
    case 2: { const auto v = static_cast<uint16_t>(bits); std::memcpy(p + 2 * i, &v, 2); break; }
    case 4: { const auto v = static_cast<uint32_t>(bits); std::memcpy(p + 4 * i, &v, 4); break; }
    default: std::memcpy(p + 8 * i, &bits, 8); break;
  }
}

double bits_value(cb_dtype d, uint64_t bits) {
  unsigned char tmp[8];
  store_bits(d, tmp, 0, bits);
  return sdk::load_as_double(d, tmp, 0);
}

}  // namespace commbench::check
