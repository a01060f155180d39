#include "measure/check_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "commbench/sdk/dtypes.hpp"

namespace commbench::check_values {
namespace {

// At most this many ranks contribute a non-neutral value to one element: the bound that keeps
// every partial result exact in the narrow formats, and the check O(count) at any world size.
// Which ranks they are moves on with the element, so every rank is checked somewhere.
constexpr int kMaxActive = 16;

// Stream tags: inputs of different reductions and moved data never share hash values.
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

// Unit in the last place of x in dtype d, subnormals included. On the check's hot path (avg):
// the exponent is read from the double's bits instead of ilogb/ldexp.
double ulp(cb_dtype d, double x) {
  const FloatFormat f = float_format(d);
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int biased = static_cast<int>((bits >> 52) & 0x7FF);
  const int e = std::max(biased == 0 ? f.min_exp : biased - 1023, f.min_exp) - f.mantissa;
  if (e < -1022) return std::ldexp(1.0, e);  // f64's own subnormal spacing
  const uint64_t out = static_cast<uint64_t>(e + 1023) << 52;
  double result;
  std::memcpy(&result, &out, sizeof result);
  return result;
}

// A uniform value in [0, m) from 64 random bits (Lemire's multiply-shift: no division).
uint64_t below(uint64_t u, uint64_t m) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(u) * m) >> 64);
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

// Floating types: a finite, normal, non-zero value (data movement never needs to preserve
// anything else bit for bit).
bool normal_finite(cb_dtype d, uint64_t bits) {
  const FloatFormat f = float_format(d);
  const int exp_bits = static_cast<int>(8 * sdk::dtype_size(d)) - 1 - f.mantissa;
  const uint64_t exp = (bits >> f.mantissa) & ((uint64_t{1} << exp_bits) - 1);
  const uint64_t all_ones = (uint64_t{1} << exp_bits) - 1;
  if (exp == 0) return false;  // zero or subnormal
  if (d == CB_DTYPE_F8E4M3) return (bits & 0x7F) != 0x7F;  // "fn": only S.1111.111 is NaN
  return exp != all_ones;
}

}  // namespace

uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

ReducePattern::ReducePattern(const CheckContext& c)
    : dtype_(c.dtype), redop_(c.redop), world_(std::max(1, c.world)),
      signed_(!is_unsigned(c.dtype)), floating_(is_float(c.dtype)) {
  const int64_t e = value_bound(dtype_);
  active_ = std::min(world_, kMaxActive);
  bound_ = e;
  doublings_ = 0;
  switch (redop_) {
    case CB_REDOP_SUM:
    case CB_REDOP_AVG:
      // Any partial sum of `active` values of magnitude <= bound stays within [-e, e].
      active_ = static_cast<int>(std::clamp<int64_t>(e / 2, 1, active_));
      bound_ = std::max<int64_t>(1, e / active_);
      break;
    case CB_REDOP_PROD:
      while ((int64_t{2} << doublings_) <= e) ++doublings_;  // 2^doublings <= e
      doublings_ = std::min(active_, doublings_);
      break;
    default:
      break;
  }
  const double inv_n = 1.0 / world_;
  inv_n_error_ = floating_ ? std::fabs(rounded(dtype_, inv_n) - inv_n) : 0;
  element_key_ = mix(kTagValue ^ static_cast<uint64_t>(redop_) ^ (uint64_t{c.generation} << 32));
  rank_keys_.resize(static_cast<size_t>(world_));
  for (int r = 0; r < world_; ++r) rank_keys_[static_cast<size_t>(r)] = mix(element_key_ + static_cast<uint64_t>(r));
}

uint64_t ReducePattern::first_active(uint64_t i) const {
  // Consecutive elements take consecutive windows of ranks: with count * active >= n, every
  // rank contributes to some element, so a dropped contribution is seen.
  if (active_ == world_) return 0;  // every rank, every element (small worlds): no division
  return (i % static_cast<uint64_t>(world_)) * static_cast<uint64_t>(active_) % static_cast<uint64_t>(world_);
}

double ReducePattern::identity() const {
  switch (redop_) {
    case CB_REDOP_PROD: return 1;
    case CB_REDOP_MIN: return static_cast<double>(bound_);
    case CB_REDOP_MAX: return signed_ ? -static_cast<double>(bound_) : 0.0;
    default: return 0;
  }
}

uint64_t ReducePattern::element_hash(uint64_t i) const { return mix(element_key_ ^ i); }

double ReducePattern::active_value(int r, int position, uint64_t h) const {
  // One full hash per element (h), then one multiply per rank: the check of a large buffer at
  // 16 active ranks stays a few ns per element and rank.
  uint64_t u = (h + rank_keys_[static_cast<size_t>(r)]) * 0x9E3779B97F4A7C15ull;
  u ^= u >> 29;
  const auto b = static_cast<uint64_t>(bound_);
  // The sign comes from the low bit, the magnitude from the high bits (below()).
  switch (redop_) {
    case CB_REDOP_PROD: {
      // doublings_ or one fewer factors of 2 per element, at positions the element's hash picks:
      // the product varies from element to element and with the inputs' generation (for an
      // unsigned dtype a fixed count made every product, in every generation, 2^doublings_).
      const int count = doublings_ >= 2 && (h >> 41 & 1) ? doublings_ - 1 : doublings_;
      const int slot = (position + static_cast<int>((h >> 48) % static_cast<uint64_t>(active_))) % active_;
      const double magnitude = slot < count ? 2 : 1;
      return signed_ && (u >> 7 & 1) ? -magnitude : magnitude;
    }
    case CB_REDOP_MIN:
    case CB_REDOP_MAX: {
      const int64_t lo = signed_ ? -bound_ : 0;
      return static_cast<double>(lo + static_cast<int64_t>(below(u, static_cast<uint64_t>(bound_ - lo + 1))));
    }
    default: {  // sum, avg: never 0, so a rank that contributes nothing is seen
      const double magnitude = static_cast<double>(below(u, b) + 1);
      return signed_ && (u >> 7 & 1) ? -magnitude : magnitude;
    }
  }
}

double ReducePattern::input(int r, uint64_t i) const {
  const auto n = static_cast<uint64_t>(world_);
  const uint64_t start = first_active(i);
  const uint64_t position = static_cast<uint64_t>(r) >= start ? static_cast<uint64_t>(r) - start
                                                              : static_cast<uint64_t>(r) + n - start;
  return position < static_cast<uint64_t>(active_) ? active_value(r, static_cast<int>(position), element_hash(i))
                                                   : identity();
}

Expected ReducePattern::expected(uint64_t i) const {
  // Only the active ranks matter: the others contribute the identity, exactly.
  double acc = redop_ == CB_REDOP_PROD ? 1 : 0, magnitudes = 0, scaled_rounding = 0;
  const double inv_n = 1.0 / world_;
  int r = static_cast<int>(first_active(i));
  const uint64_t h = element_hash(i);
  for (int p = 0; p < active_; ++p, r = r + 1 == world_ ? 0 : r + 1) {
    const double v = active_value(r, p, h);
    switch (redop_) {
      case CB_REDOP_PROD: acc *= v; break;
      case CB_REDOP_MIN: acc = p == 0 ? v : std::min(acc, v); break;
      case CB_REDOP_MAX: acc = p == 0 ? v : std::max(acc, v); break;
      default:
        acc += v;
        if (redop_ == CB_REDOP_AVG && floating_) {
          magnitudes += std::fabs(v);
          scaled_rounding += ulp(dtype_, std::fabs(v) * inv_n) / 2 + std::fabs(v) * inv_n_error_;
        }
        break;
    }
  }
  // Min/max: inactive ranks hold the far end of the range, which an active rank may also hold.
  if (active_ < world_ && redop_ == CB_REDOP_MIN) acc = std::min(acc, identity());
  if (active_ < world_ && redop_ == CB_REDOP_MAX) acc = std::max(acc, identity());
  Expected out{acc, 0};
  if (redop_ != CB_REDOP_AVG || world_ == 1) return out;
  if (!floating_) {
    out.value = std::trunc(acc / world_);  // the ABI: integer averages truncate
    return out;
  }
  // Floating avg: a backend may divide the exact sum once, or (NCCL) multiply each input by
  // 1/n rounded to the dtype and add the products with a rounding per addition. The bound
  // covers the worst of those: the final rounding, each product's rounding and scalar error,
  // and one rounding of a partial sum per addition.
  out.value = acc / world_;
  out.tolerance = ulp(dtype_, out.value) / 2 + scaled_rounding +
                  (active_ - 1) * ulp(dtype_, magnitudes * inv_n) / 2;
  return out;
}

uint64_t moved_key(int src, int dst, uint32_t generation) {
  return hash3(kTagMoved + (uint64_t{generation} << 48), static_cast<uint64_t>(static_cast<int64_t>(src)),
               static_cast<uint64_t>(static_cast<int64_t>(dst)));
}

uint64_t moved_bits(cb_dtype d, uint64_t key, uint64_t i) {
  const size_t bytes = sdk::dtype_size(d);
  const uint64_t mask = bytes >= 8 ? ~0ull : (1ull << (8 * bytes)) - 1;
  const uint64_t poison = poison_bits(d);
  const bool floating = is_float(d);
  // key + i*odd is a bijection of i for each key, and mix another: no element of a block, nor of
  // another block (whose key is a hash), repeats this one's stream at any shift.
  for (uint64_t salt = 0;; ++salt) {
    const uint64_t bits = mix(key + (i + (salt << 58)) * 0xD1B54A32D192ED03ull) & mask;
    if (bits == poison) continue;
    // Normal finite values only: a copy that flushes subnormals or canonicalises NaNs is still
    // a correct copy of the numbers.
    if (floating && !normal_finite(d, bits)) continue;
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

}  // namespace commbench::check_values
