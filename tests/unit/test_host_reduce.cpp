// sdk::reduce (host_reduce.hpp), which the UCX plugin's reduction algorithms, the Gloo plugin and
// the example backend run per byte. Its vector loops (16 bytes a step, 32 with AVX2) and scalar
// tail must give element for element what op(a[i], b[i]) gives, for every dtype, reduce op and
// ISA choice, for counts around every lane count, with dst separate from, or the very same as, a
// or b (the aliasing the contract allows and the algorithms use: accumulate in place).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"

namespace commbench {
namespace {

double combine(cb_redop op, double x, double y) {
  switch (op) {
    case CB_REDOP_PROD: return x * y;
    case CB_REDOP_MIN: return y < x ? y : x;
    case CB_REDOP_MAX: return y > x ? y : x;
    default: return x + y;  // SUM, and AVG's elementwise part
  }
}

enum class Alias { kNone, kDstIsA, kDstIsB };

const char* isa_name(sdk::ReduceIsa isa) { return isa == sdk::ReduceIsa::Widest ? "widest" : "baseline"; }

TEST(HostReduce, VectorLoopsAndTailMatchTheElementwiseOpForEveryDtypeRedopCountAliasAndIsa) {
  for (sdk::ReduceIsa isa : {sdk::ReduceIsa::Widest, sdk::ReduceIsa::Baseline})
    for (int d = 0; d < CB_DTYPE_COUNT_V1; ++d)
      for (int o = 0; o < CB_REDOP_COUNT_V1; ++o)
        // 16- and 32-byte vectors hold 2 to 32 elements: below, at, and across each lane count.
        for (size_t n : {0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 129, 1000})
          for (Alias alias : {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB}) {
            const auto dtype = static_cast<cb_dtype>(d);
            const auto op = static_cast<cb_redop>(o);
            const size_t es = sdk::dtype_size(dtype);
            // Small integers, exact in every dtype (fp8 e5m2 included) and in their sums and
            // products; a and b differ so that MIN/MAX and the operand order show.
            std::vector<unsigned char> a(n * es + 1), b(n * es + 1), out(n * es + 1);
            std::vector<double> want(n);
            for (size_t i = 0; i < n; ++i) {
              const double x = static_cast<double>(i % 3 + 1), y = static_cast<double>((i * 7 + 2) % 3 + 1);
              sdk::store_from_double(dtype, a.data(), i, x);
              sdk::store_from_double(dtype, b.data(), i, y);
              want[i] = combine(op, x, y);
            }
            void* dst = alias == Alias::kDstIsA ? a.data() : alias == Alias::kDstIsB ? b.data() : out.data();
            // A guard byte past the end: the vector loop must not write beyond n elements.
            static_cast<unsigned char*>(dst)[n * es] = 0xA5;
            sdk::reduce(dtype, op, dst, a.data(), b.data(), n, isa);
            const std::string what = std::string(sdk::dtype_name(dtype)) + " " + std::string(sdk::redop_name(op)) +
                                     " n=" + std::to_string(n) + " alias=" + std::to_string(static_cast<int>(alias)) +
                                     " isa=" + isa_name(isa);
            ASSERT_EQ(static_cast<unsigned char*>(dst)[n * es], 0xA5) << what;
            for (size_t i = 0; i < n; ++i)
              ASSERT_EQ(sdk::load_as_double(dtype, dst, i), want[i]) << what << " element " << i;
          }
}

// The scalar op, in the element type itself (not through double), for the bitwise comparison.
// Integers wrap: computed in the unsigned type of the same width (signed overflow is undefined).
template <class T>
T scalar(cb_redop op, T x, T y) {
  using U = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, std::type_identity<T>>::type;
  switch (op) {
    case CB_REDOP_PROD: return static_cast<T>(static_cast<U>(static_cast<U>(x) * static_cast<U>(y)));
    case CB_REDOP_MIN: return y < x ? y : x;
    case CB_REDOP_MAX: return y > x ? y : x;
    default: return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
  }
}

// Every pair of special values in a vector's lanes and in the tail: NaN and signed zeros pick the
// same operand as the scalar ternary does (a vector min/max instruction with its operands swapped
// would not), infinities, denormals, and integer wrap-around, signed types included.
template <class T>
void expect_bitwise_like_scalar(cb_dtype dtype, const std::vector<T>& values) {
  std::vector<T> a, b;
  for (T x : values)
    for (T y : values) a.push_back(x), b.push_back(y);
  for (sdk::ReduceIsa isa : {sdk::ReduceIsa::Widest, sdk::ReduceIsa::Baseline})
    for (cb_redop op : {CB_REDOP_SUM, CB_REDOP_PROD, CB_REDOP_MIN, CB_REDOP_MAX}) {
      std::vector<T> got(a.size());
      sdk::reduce(dtype, op, got.data(), a.data(), b.data(), a.size(), isa);
      for (size_t i = 0; i < a.size(); ++i) {
        const T want = scalar(op, a[i], b[i]);
        EXPECT_EQ(std::memcmp(&got[i], &want, sizeof(T)), 0)
            << sdk::dtype_name(dtype) << " " << sdk::redop_name(op) << " isa=" << isa_name(isa) << " a=" << +a[i]
            << " b=" << +b[i] << " got " << +got[i] << " want " << +want;
      }
    }
}

TEST(HostReduce, SpecialValuesGiveBitForBitTheScalarResult) {
  using F = std::numeric_limits<float>;
  using D = std::numeric_limits<double>;
  expect_bitwise_like_scalar<float>(CB_DTYPE_F32, {F::quiet_NaN(), -0.0f, 0.0f, F::infinity(), -F::infinity(),
                                                   F::denorm_min(), -1.5f, 3.0f, F::max()});
  expect_bitwise_like_scalar<double>(CB_DTYPE_F64, {D::quiet_NaN(), -0.0, 0.0, D::infinity(), D::denorm_min(),
                                                    -2.5, D::max()});
  expect_bitwise_like_scalar<uint8_t>(CB_DTYPE_UINT8, {0, 1, 127, 128, 200, 255});
  expect_bitwise_like_scalar<int8_t>(CB_DTYPE_INT8, {-128, -1, 0, 1, 100, 127});
  expect_bitwise_like_scalar<uint32_t>(CB_DTYPE_UINT32, {0u, 1u, 0x7fffffffu, 0x80000000u, 0xffffffffu});
  expect_bitwise_like_scalar<uint64_t>(CB_DTYPE_UINT64, {0ull, 3ull, 0x8000000000000000ull, ~0ull});
  // Signed sums and products past the range wrap, as the unsigned arithmetic does.
  expect_bitwise_like_scalar<int32_t>(CB_DTYPE_INT32, {std::numeric_limits<int32_t>::min(), -7, -1, 0, 3, 65536,
                                                       std::numeric_limits<int32_t>::max()});
  expect_bitwise_like_scalar<int64_t>(CB_DTYPE_INT64, {std::numeric_limits<int64_t>::min(), -1, 0, 5,
                                                       std::numeric_limits<int64_t>::max()});
}

}  // namespace
}  // namespace commbench
