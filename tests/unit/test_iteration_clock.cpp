// IterationClock on the host timer, and its Unread scope (batch's loop reads its own clock once
// per iteration and discards what start/stop would measure).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "measure/iteration_clock.h"

namespace commbench {
namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

TEST(IterationClock, HostClockMeasuresWhatLiesBetweenStartAndStop) {
  IterationClock clock(TimingMethod::Host, nullptr);
  clock.start();
  sleep_ms(20);
  EXPECT_GE(clock.stop(1000), 19000.0);
}

TEST(IterationClock, UnreadReadsNoTimerWhileItLivesAndTheClockWorksAgainAfter) {
  IterationClock clock(TimingMethod::Host, nullptr);
  {
    IterationClock::Unread unread(clock);
    clock.start();
    sleep_ms(20);
    clock.posted();
    EXPECT_EQ(clock.stop(1000), 0.0);
    {
      IterationClock::Unread nested(clock);
    }
    clock.start();  // the outer scope still holds after a nested one ends
    EXPECT_EQ(clock.stop(1000), 0.0);
  }
  clock.start();
  sleep_ms(20);
  EXPECT_GE(clock.stop(1000), 19000.0);
}

}  // namespace
}  // namespace commbench
