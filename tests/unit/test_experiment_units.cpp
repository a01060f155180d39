// Durations and "did you mean" suggestions used by the experiment parser.
#include <gtest/gtest.h>

#include <array>

#include "experiment/did_you_mean.h"
#include "experiment/durations.h"

namespace commbench {
namespace {

TEST(Durations, EveryUnit) {
  EXPECT_DOUBLE_EQ(*parse_duration("250ns").value, 250e-9);
  EXPECT_DOUBLE_EQ(*parse_duration("250us").value, 250e-6);
  EXPECT_DOUBLE_EQ(*parse_duration("500ms").value, 0.5);
  EXPECT_DOUBLE_EQ(*parse_duration("2s").value, 2);
  EXPECT_DOUBLE_EQ(*parse_duration("1.5s").value, 1.5);
  EXPECT_DOUBLE_EQ(*parse_duration("1min").value, 60);
  EXPECT_DOUBLE_EQ(*parse_duration("10 min").value, 600);
  EXPECT_DOUBLE_EQ(*parse_duration("2h").value, 7200);
  EXPECT_DOUBLE_EQ(*parse_duration("0s").value, 0);
}

TEST(Durations, Errors) {
  EXPECT_EQ(parse_duration("1m").error,
            "unknown unit 'm' in duration '1m'; did you mean 'min' or 'ms'? (write a number of "
            "seconds or a number with a unit ns, us, ms, s, min, h, e.g. \"500ms\")");
  EXPECT_EQ(parse_duration("3 msec").error,
            "unknown unit 'msec' in duration '3 msec'; did you mean 'ms'? (write a number of "
            "seconds or a number with a unit ns, us, ms, s, min, h, e.g. \"500ms\")");
  EXPECT_EQ(parse_duration("5").error,
            "duration '5' has no unit: write \"5s\", or a number of seconds without quotes");
  EXPECT_EQ(parse_duration("-1s").error, "duration '-1s' is negative");
  EXPECT_EQ(parse_duration("soon").error,
            "cannot read duration 'soon': write a number of seconds or a number with a unit ns, "
            "us, ms, s, min, h, e.g. \"500ms\"");
  EXPECT_FALSE(parse_duration("1.2.3s"));
}

TEST(EditDistance, CountsInsertionsDeletionsSubstitutionsAndTranspositions) {
  EXPECT_EQ(edit_distance("iterations", "iterations"), 0u);
  EXPECT_EQ(edit_distance("iteration", "iterations"), 1u);
  EXPECT_EQ(edit_distance("itreations", "iterations"), 1u);  // one transposition
  EXPECT_EQ(edit_distance("warmpu", "warmup"), 1u);
  EXPECT_EQ(edit_distance("wramup", "warmup"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("", "abc"), 3u);
}

constexpr std::array<std::string_view, 4> kKeys{"iterations", "warmup", "world_sizes", "window"};

TEST(DidYouMean, SuggestsTheClosestKey) {
  EXPECT_EQ(closest_match("iteration", kKeys), "iterations");
  EXPECT_EQ(closest_match("Warmup", kKeys), "warmup");  // case is ignored
  EXPECT_EQ(closest_match("windw", kKeys), "window");
  EXPECT_EQ(closest_match("world", kKeys), "world_sizes");  // prefix
  EXPECT_EQ(did_you_mean("warmups", kKeys), "; did you mean 'warmup'?");
}

TEST(DidYouMean, StaysQuietWhenNothingIsClose) {
  EXPECT_FALSE(closest_match("colour", kKeys));
  EXPECT_FALSE(closest_match("wo", kKeys));  // too short for a prefix match
  EXPECT_FALSE(closest_match("xyz", kKeys));
  EXPECT_EQ(did_you_mean("colour", kKeys), "");
}

}  // namespace
}  // namespace commbench
