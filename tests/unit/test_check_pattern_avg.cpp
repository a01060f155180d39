// `avg` results from backends that pre-multiply (NCCL: each input times 1/n, then a sum) round at
// every step; the check accepts that rounding and nothing more.
#include <gtest/gtest.h>

#include <vector>

#include "commbench/sdk/dtypes.hpp"
#include "measure/check_pattern.h"

namespace commbench {
namespace {

// The allreduce result a pre-multiplying backend produces, rounding to the dtype at each step.
std::vector<unsigned char> premultiplied_avg(const CheckContext& base, uint64_t count) {
  const size_t es = sdk::dtype_size(base.dtype);
  std::vector<unsigned char> acc(count * es), in(count * es), scaled(count * es);
  for (int r = 0; r < base.world; ++r) {
    CheckContext c = base;
    c.rank = r;
    fill_send(c, in.data(), count);
    for (uint64_t i = 0; i < count; ++i) {
      sdk::store_from_double(c.dtype, scaled.data(), i, sdk::load_as_double(c.dtype, in.data(), i) * (1.0 / c.world));
      const double sum = (r == 0 ? 0.0 : sdk::load_as_double(c.dtype, acc.data(), i)) +
                         sdk::load_as_double(c.dtype, scaled.data(), i);
      sdk::store_from_double(c.dtype, acc.data(), i, sum);
    }
  }
  return acc;
}

TEST(CheckPatternAvg, PremultipliedSumPassesForEveryFloatTypeAndWorld) {
  for (cb_dtype d : {CB_DTYPE_F32, CB_DTYPE_F64, CB_DTYPE_F16, CB_DTYPE_BF16, CB_DTYPE_F8E4M3, CB_DTYPE_F8E5M2})
    for (int world : {2, 3, 4, 8}) {
      CheckContext c{OpKind::Allreduce, d, CB_REDOP_AVG, 0, world, 0, 257, {0, 0}};
      const auto got = premultiplied_avg(c, c.count);
      EXPECT_EQ(count_wrong(c, got.data(), c.count), 0) << sdk::dtype_name(d) << " world " << world;
    }
}

TEST(CheckPatternAvg, AResultOffByMoreThanRoundingIsWrong) {
  for (cb_dtype d : {CB_DTYPE_F32, CB_DTYPE_F16, CB_DTYPE_BF16}) {
    CheckContext c{OpKind::Allreduce, d, CB_REDOP_AVG, 0, 4, 0, 64, {0, 0}};
    auto got = premultiplied_avg(c, c.count);
    // A sum instead of an average: every element is 4x too large.
    for (uint64_t i = 0; i < c.count; ++i)
      sdk::store_from_double(d, got.data(), i, sdk::load_as_double(d, got.data(), i) * 4);
    EXPECT_EQ(count_wrong(c, got.data(), c.count), static_cast<int64_t>(c.count)) << sdk::dtype_name(d);
  }
}

TEST(CheckPatternAvg, SumsAndIntegerAveragesStayExact) {
  CheckContext c{OpKind::Allreduce, CB_DTYPE_F32, CB_REDOP_SUM, 0, 4, 0, 16, {0, 0}};
  std::vector<float> sum(16);
  for (int r = 0; r < 4; ++r) {
    std::vector<float> in(16);
    CheckContext cr = c;
    cr.rank = r;
    fill_send(cr, in.data(), 16);
    for (int i = 0; i < 16; ++i) sum[i] += in[i];
  }
  EXPECT_EQ(count_wrong(c, sum.data(), 16), 0);
  sum[3] = std::nextafter(sum[3], 1e9f);  // one ulp off is wrong for a sum
  EXPECT_EQ(count_wrong(c, sum.data(), 16), 1);
}

}  // namespace
}  // namespace commbench
