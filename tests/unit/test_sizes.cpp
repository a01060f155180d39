// Size and unit parsing: every unit, decimals, element counts, errors, overflow.
#include <gtest/gtest.h>

#include "experiment/sizes.h"

namespace commbench {
namespace {

struct SizeCase {
  const char* text;
  uint64_t value;
  bool elements;
};

class SizeParsing : public ::testing::TestWithParam<SizeCase> {};

TEST_P(SizeParsing, ParsesToExactValue) {
  const SizeCase& c = GetParam();
  auto parsed = parse_size(c.text);
  ASSERT_TRUE(parsed) << c.text << ": " << parsed.error;
  EXPECT_EQ(parsed.value->value, c.value) << c.text;
  EXPECT_EQ(parsed.value->elements, c.elements) << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    ByteUnits, SizeParsing,
    ::testing::Values(SizeCase{"1B", 1, false}, SizeCase{"4096B", 4096, false},
                      SizeCase{"1KiB", 1024, false}, SizeCase{"4KiB", 4096, false},
                      SizeCase{"1MiB", 1048576, false}, SizeCase{"1GiB", 1073741824, false},
                      SizeCase{"2TiB", 2199023255552ull, false}, SizeCase{"1KB", 1000, false},
                      SizeCase{"1kB", 1000, false}, SizeCase{"1MB", 1000000, false},
                      SizeCase{"10MB", 10000000, false}, SizeCase{"1GB", 1000000000, false},
                      SizeCase{"3TB", 3000000000000ull, false},
                      // optional space, surrounding blanks
                      SizeCase{"64 KiB", 65536, false}, SizeCase{"  1 MiB ", 1048576, false}));

INSTANTIATE_TEST_SUITE_P(
    Decimals, SizeParsing,
    ::testing::Values(SizeCase{"1.5KiB", 1536, false}, SizeCase{"0.5MiB", 524288, false},
                      SizeCase{"2.5MB", 2500000, false}, SizeCase{"1.0B", 1, false},
                      SizeCase{"0.25 KiB", 256, false}, SizeCase{"1.5M elements", 1572864, true}));

// Element multipliers are binary in both spellings: "1M elements" = 2^20 elements (seed 000).
INSTANTIATE_TEST_SUITE_P(
    Elements, SizeParsing,
    ::testing::Values(SizeCase{"4096 elements", 4096, true}, SizeCase{"1 element", 1, true},
                      SizeCase{"1K elem", 1024, true}, SizeCase{"3 elems", 3, true},
                      SizeCase{"1M elements", 1048576, true}, SizeCase{"4M elements", 4194304, true},
                      SizeCase{"16M elements", 16777216, true},
                      SizeCase{"16Mi elements", 16777216, true},
                      SizeCase{"1Ki elements", 1024, true}, SizeCase{"2G elements", 2147483648ull, true},
                      SizeCase{"1Gi elements", 1073741824, true},
                      SizeCase{"1T elements", 1099511627776ull, true},
                      SizeCase{"1Ti elements", 1099511627776ull, true}));

TEST(SizeParsing, KeepsTheTextAsWritten) {
  auto parsed = parse_size(" 1M elements ");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed.value->text, "1M elements");
}

TEST(SizeParsing, LargestRepresentableSizeIsAccepted) {
  auto parsed = parse_size("9223372036854775807B");  // 2^63-1
  ASSERT_TRUE(parsed) << parsed.error;
  EXPECT_EQ(parsed.value->value, 9223372036854775807ull);
}

struct BadSize {
  const char* text;
  const char* message;
};

class BadSizeText : public ::testing::TestWithParam<BadSize> {};

TEST_P(BadSizeText, IsRejectedWithMessage) {
  auto parsed = parse_size(GetParam().text);
  EXPECT_FALSE(parsed) << GetParam().text;
  EXPECT_EQ(parsed.error, GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Errors, BadSizeText,
    ::testing::Values(
        BadSize{"0.3B", "size '0.3B' is not a whole number of bytes"},
        BadSize{"1.5 elements", "size '1.5 elements' is not a whole number of elements"},
        BadSize{"0B", "size '0B' is zero: sizes must be greater than 0"},
        BadSize{"0 elements", "size '0 elements' is zero: sizes must be greater than 0"},
        BadSize{"-4KiB", "size '-4KiB' is negative: sizes must be greater than 0"},
        BadSize{"", "empty size: write e.g. \"4KiB\" or \"1M elements\""},
        BadSize{"KiB", "size 'KiB' does not start with a number: write e.g. \"4KiB\" or \"1M elements\""},
        BadSize{"1.KiB", "size '1.KiB': a digit must follow the decimal point: write e.g. \"1KiB\" or \"1.5KiB\""},
        BadSize{"16.", "size '16.': a digit must follow the decimal point: write e.g. \"16KiB\" or \"16.5KiB\""},
        BadSize{"4096", "size '4096' has no unit: write \"4096B\" for bytes or \"4096 elements\", or an "
                        "integer (bytes) without quotes"},
        BadSize{"4Kib", "unknown unit 'Kib' in size '4Kib'; did you mean 'KiB'? (byte units are B, KiB, "
                        "MiB, GiB, TiB (binary) and KB, MB, GB, TB (decimal); element counts are "
                        "written like \"1M elements\")"},
        BadSize{"1M", "unknown unit 'M' in size '1M'; did you mean '1MiB' (bytes) or '1M elements'? "
                      "(byte units are B, KiB, MiB, GiB, TiB (binary) and KB, MB, GB, TB (decimal); "
                      "element counts are written like \"1M elements\")"},
        BadSize{"2 furlongs", "unknown unit 'furlongs' in size '2 furlongs' (byte units are B, KiB, "
                              "MiB, GiB, TiB (binary) and KB, MB, GB, TB (decimal); element counts "
                              "are written like \"1M elements\")"},
        BadSize{"1X elements", "unknown multiplier 'X' in size '1X elements': element counts take K, "
                               "M, G, T (or Ki, Mi, Gi, Ti; all binary), e.g. \"16M elements\""},
        BadSize{"1 KiB MiB", "cannot read size '1 KiB MiB' (byte units are B, KiB, MiB, GiB, TiB "
                             "(binary) and KB, MB, GB, TB (decimal); element counts are written like "
                             "\"1M elements\")"}));

// Anything beyond 2^63-1 bytes or elements is rejected, including results of a multiplier.
INSTANTIATE_TEST_SUITE_P(
    Overflow, BadSizeText,
    ::testing::Values(
        BadSize{"9223372036854775808B", "size '9223372036854775808B' is too large: the limit is 2^63-1 bytes"},
        BadSize{"8388608TiB", "size '8388608TiB' is too large: the limit is 2^63-1 bytes"},
        BadSize{"8388608T elements", "size '8388608T elements' is too large: the limit is 2^63-1 elements"},
        BadSize{"99999999999999999999999999999999999999999B",
                "size '99999999999999999999999999999999999999999B' is too large: the limit is 2^63-1 bytes"}));

TEST(SizeParsing, LargeButValidMultiplierResult) {
  auto parsed = parse_size("8388607TiB");  // (2^23 - 1) * 2^40 < 2^63
  ASSERT_TRUE(parsed) << parsed.error;
  EXPECT_EQ(parsed.value->value, (uint64_t{1} << 63) - (uint64_t{1} << 40));
}

TEST(SizeFromInteger, AcceptsPositiveBytes) {
  auto parsed = size_from_integer(4096);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed.value->value, 4096u);
  EXPECT_FALSE(parsed.value->elements);
  EXPECT_EQ(parsed.value->text, "4096");
}

TEST(SizeFromInteger, RejectsZeroAndNegative) {
  EXPECT_EQ(size_from_integer(0).error, "size 0 is not positive: sizes must be greater than 0");
  EXPECT_EQ(size_from_integer(-8).error, "size -8 is not positive: sizes must be greater than 0");
}

TEST(SizeSpecBytes, ElementsScaleByDtypeSize) {
  auto parsed = parse_size("1M elements");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed.value->bytes(4), 4u << 20);
  EXPECT_EQ(parse_size("1MiB").value->bytes(4), 1u << 20);  // bytes do not scale
}

TEST(FormatSize, PicksTheLargestExactUnit) {
  EXPECT_EQ(format_size(1, false), "1B");
  EXPECT_EQ(format_size(1000, false), "1KB");
  EXPECT_EQ(format_size(1024, false), "1KiB");
  EXPECT_EQ(format_size(3 << 20, false), "3MiB");
  EXPECT_EQ(format_size(2000000, false), "2MB");
  EXPECT_EQ(format_size(1500, false), "1500B");
  EXPECT_EQ(format_size(uint64_t{1} << 40, false), "1TiB");
  EXPECT_EQ(format_size(1 << 20, true), "1M elements");
  EXPECT_EQ(format_size(12, true), "12 elements");
  EXPECT_EQ(format_size(3 << 10, true), "3K elements");
}

TEST(FormatSize, RoundTripsThroughParse) {
  for (uint64_t v : {1ull, 7ull, 1000ull, 1536ull, 1ull << 30, 5000000000ull}) {
    for (bool elements : {false, true}) {
      auto parsed = parse_size(format_size(v, elements));
      ASSERT_TRUE(parsed) << format_size(v, elements) << ": " << parsed.error;
      EXPECT_EQ(parsed.value->value, v);
      EXPECT_EQ(parsed.value->elements, elements);
    }
  }
}

std::vector<uint64_t> values(const std::vector<SizeSpec>& sizes) {
  std::vector<uint64_t> out;
  for (const auto& s : sizes) out.push_back(s.value);
  return out;
}

TEST(SizeRange, DoublesFromMinToMaxInclusive) {
  auto r = expand_size_range(*parse_size("1KiB").value, *parse_size("8KiB").value, 2);
  ASSERT_TRUE(r) << r.error;
  EXPECT_EQ(values(*r.value), (std::vector<uint64_t>{1024, 2048, 4096, 8192}));
  EXPECT_EQ((*r.value)[2].text, "4KiB");
}

TEST(SizeRange, MaxIncludedOnlyIfReached) {
  auto r = expand_size_range(*parse_size("1B").value, *parse_size("100B").value, 4);
  ASSERT_TRUE(r);
  EXPECT_EQ(values(*r.value), (std::vector<uint64_t>{1, 4, 16, 64}));
}

TEST(SizeRange, MinEqualsMaxGivesOneSize) {
  auto r = expand_size_range(*parse_size("3MB").value, *parse_size("3MB").value, 2);
  ASSERT_TRUE(r);
  EXPECT_EQ(values(*r.value), (std::vector<uint64_t>{3000000}));
}

TEST(SizeRange, ElementRangesStayInElements) {
  auto r = expand_size_range(*parse_size("1M elements").value, *parse_size("16M elements").value, 4);
  ASSERT_TRUE(r);
  EXPECT_EQ(values(*r.value), (std::vector<uint64_t>{1 << 20, 4 << 20, 16 << 20}));
  for (const auto& s : *r.value) EXPECT_TRUE(s.elements);
  EXPECT_EQ((*r.value)[1].text, "4M elements");
}

TEST(SizeRange, StopsBeforeOverflowNearTheLimit) {
  auto r = expand_size_range(SizeSpec{1, false, "1B"}, SizeSpec{kMaxSize, false, "max"}, 2);
  ASSERT_TRUE(r);
  EXPECT_EQ(r.value->size(), 63u);  // 2^0 .. 2^62; 2^63 would pass the limit
  EXPECT_EQ(r.value->back().value, uint64_t{1} << 62);
}

TEST(SizeRange, RejectsMixedKindsReversedBoundsAndSmallFactor) {
  const SizeSpec kib = *parse_size("1KiB").value, elems = *parse_size("1K elements").value;
  EXPECT_EQ(expand_size_range(kib, elems, 2).error,
            "'min' (1KiB) and 'max' (1K elements) must both be bytes or both element counts");
  EXPECT_EQ(expand_size_range(*parse_size("1MiB").value, kib, 2).error,
            "'min' (1MiB) is larger than 'max' (1KiB)");
  EXPECT_EQ(expand_size_range(kib, kib, 1).error, "'factor' must be at least 2, got 1");
}

}  // namespace
}  // namespace commbench
