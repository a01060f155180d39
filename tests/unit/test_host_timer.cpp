// The worker's host timer: which clock COMMBENCH_TIMER selects, its errors, and that the
// calibrated counter measures the same intervals as steady_clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "measure/host_timer.h"

namespace commbench {
namespace {

// Read here independently of the implementation: does Linux call this CPU's counter invariant?
bool cpu_has_invariant_counter() {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
  }
#endif
  return false;
}

std::string error_of(const char* setting) {
  try {
    HostTimer::choose(setting);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

// The timer's and steady_clock's view of one sleep, in microseconds.
std::pair<double, double> measure_sleep(const HostTimer& timer, std::chrono::milliseconds ms) {
  using namespace std::chrono;
  const double t0 = timer.now_us();
  const auto s0 = steady_clock::now();
  std::this_thread::sleep_for(ms);
  const double t1 = timer.now_us();
  const auto s1 = steady_clock::now();
  return {t1 - t0, duration<double, std::micro>(s1 - s0).count()};
}

TEST(HostTimer, SteadyIsUsedWhenAskedFor) {
  const HostTimer t = HostTimer::choose("steady");
  EXPECT_FALSE(t.uses_counter());
  EXPECT_EQ(t.describe(), "steady_clock (COMMBENCH_TIMER=steady)");
  const auto [timer_us, steady_us] = measure_sleep(t, std::chrono::milliseconds(20));
  EXPECT_NEAR(timer_us, steady_us, 50.0);
}

TEST(HostTimer, AnUnknownSettingIsRefusedWithTheChoices) {
  EXPECT_EQ(error_of("rdtsc"),
            "COMMBENCH_TIMER='rdtsc' is not one of auto, tsc, steady; unset it to let commbench choose");
}

TEST(HostTimer, AutoUsesTheCounterExactlyWhenItIsInvariant) {
  for (const char* setting : {static_cast<const char*>(nullptr), "", "auto"}) {
    const HostTimer t = HostTimer::choose(setting);
    EXPECT_EQ(t.uses_counter(), cpu_has_invariant_counter());
    if (t.uses_counter()) {
      EXPECT_GT(t.counter_mhz(), 100.0);
      EXPECT_LT(t.counter_mhz(), 20000.0);
      EXPECT_NE(t.describe().find("tsc (invariant, "), std::string::npos) << t.describe();
    } else {
      EXPECT_EQ(t.describe(), "steady_clock (no invariant time-stamp counter)");
    }
  }
}

TEST(HostTimer, ForcingTheCounterFailsWithoutOneAndOtherwiseUsesIt) {
  if (cpu_has_invariant_counter()) {
    EXPECT_TRUE(HostTimer::choose("tsc").uses_counter());
  } else {
    EXPECT_NE(error_of("tsc").find("no invariant time-stamp counter"), std::string::npos);
  }
}

// The calibration is what makes counter readings microseconds: over 50 ms the two clocks must
// agree to well under 1% (calibration is good to ppm; the slack is for the reads themselves and
// a descheduled thread between them on a busy machine).
TEST(HostTimer, TheCalibratedCounterAgreesWithSteadyClock) {
  const HostTimer t = HostTimer::choose("auto");
  double best = 1.0;  // a descheduling between the paired reads may spoil one try, not three
  for (int i = 0; i < 3 && best >= 0.002; ++i) {
    const auto [timer_us, steady_us] = measure_sleep(t, std::chrono::milliseconds(50));
    ASSERT_GT(steady_us, 49000.0);
    best = std::min(best, std::abs(timer_us - steady_us) / steady_us);
  }
  EXPECT_LT(best, 0.002) << t.describe();
}

TEST(HostTimer, ReadingsNeverGoBackwards) {
  const HostTimer& t = HostTimer::get();
  double last = t.now_us();
  for (int i = 0; i < 100000; ++i) {
    const double now = t.now_us();
    ASSERT_GE(now, last);
    last = now;
  }
}

}  // namespace
}  // namespace commbench
