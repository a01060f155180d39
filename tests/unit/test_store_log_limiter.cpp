// The store's log limit: a flood of refused connections cannot fill the disk under stderr.
#include <gtest/gtest.h>

#include "bootstrap/log_limiter.h"

namespace commbench {
namespace {

TEST(StoreLogLimiter, ABurstIsPrintedTheRestCountedAndSummedUpInTheNextWindow) {
  LogLimiter limiter;
  const auto t0 = LogLimiter::Clock::time_point() + std::chrono::hours(1);
  size_t printed = 0;
  for (int i = 0; i < 1000; ++i) {
    const auto v = limiter.admit(t0 + std::chrono::milliseconds(i));
    EXPECT_FALSE(v.summary) << i;
    printed += v.print;
  }
  EXPECT_EQ(printed, LogLimiter::kBurst);
  const auto next = limiter.admit(t0 + LogLimiter::kWindow + std::chrono::milliseconds(1));
  ASSERT_TRUE(next.summary);
  EXPECT_NE(next.summary->find(std::to_string(1000 - LogLimiter::kBurst) + " more message"), std::string::npos)
      << *next.summary;
  EXPECT_TRUE(next.print);
  // A quiet window has nothing to sum up.
  EXPECT_FALSE(limiter.held_back_summary());
  const auto later = limiter.admit(t0 + 3 * LogLimiter::kWindow);
  EXPECT_FALSE(later.summary);
  EXPECT_TRUE(later.print);
}

TEST(StoreLogLimiter, WhatTheLastWindowHeldBackIsSaidAtTheEnd) {
  LogLimiter limiter;
  const auto t0 = LogLimiter::Clock::time_point() + std::chrono::hours(1);
  for (size_t i = 0; i < LogLimiter::kBurst + 3; ++i) limiter.admit(t0);
  const auto summary = limiter.held_back_summary();
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->rfind("3 more message", 0), 0u) << *summary;
  EXPECT_FALSE(limiter.held_back_summary()) << "said once";
}

}  // namespace
}  // namespace commbench
