// sdk::reduce, which every reduction algorithm here runs per byte: its loops go in fixed chunks
// of 64 bytes that GCC vectorises under "no dependence" (dtypes.hpp). The chunks and the scalar
// tail must give element for element what op(a[i], b[i]) gives, for every dtype and reduce op,
// for counts around the chunk length, with dst separate from, or the very same as, a or b (the
// aliasing the contract allows and the algorithms use: accumulate in place).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "commbench/sdk/dtypes.hpp"

namespace commbench::ucx_backend {
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

TEST(HostReduce, ChunksAndTailMatchTheElementwiseOpForEveryDtypeRedopCountAndAlias) {
  for (int d = 0; d < CB_DTYPE_COUNT_V1; ++d)
    for (int o = 0; o < CB_REDOP_COUNT_V1; ++o)
      // 64-byte chunks hold 8 to 64 elements: below, at, and across several chunk lengths.
      for (size_t n : {size_t{0}, size_t{1}, size_t{7}, size_t{8}, size_t{9}, size_t{15}, size_t{16},
                       size_t{17}, size_t{63}, size_t{64}, size_t{65}, size_t{129}, size_t{1000}})
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
          // A guard byte past the end: the chunked loop must not write beyond n elements.
          static_cast<unsigned char*>(dst)[n * es] = 0xA5;
          sdk::reduce(dtype, op, dst, a.data(), b.data(), n);
          const std::string what = std::string(sdk::dtype_name(dtype)) + " " + std::string(sdk::redop_name(op)) +
                                   " n=" + std::to_string(n) + " alias=" + std::to_string(static_cast<int>(alias));
          ASSERT_EQ(static_cast<unsigned char*>(dst)[n * es], 0xA5) << what;
          for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(sdk::load_as_double(dtype, dst, i), want[i]) << what << " element " << i;
        }
}

}  // namespace
}  // namespace commbench::ucx_backend
