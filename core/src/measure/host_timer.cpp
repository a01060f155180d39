#include "measure/host_timer.h"

#include <time.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <thread>

#include <fmt/format.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace commbench {
namespace {

// An invariant counter ticks at one rate whatever the core's frequency or sleep state, and
// Linux says so with both flags. Without them the counter may stop or change rate.
bool counter_is_invariant() {
#if defined(__x86_64__)
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    bool constant = false, nonstop = false;
    for (std::string w; words >> w;) {
      constant |= w == "constant_tsc";
      nonstop |= w == "nonstop_tsc";
    }
    return constant && nonstop;
  }
#endif
  return false;
}

struct ReadPair {
  uint64_t ticks = 0;
  double steady_us = 0;
};

double steady_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

double HostTimer::steady_now_us() { return steady_us() - steady_origin_us(); }

int64_t HostTimer::steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double HostTimer::steady_origin_us() {
  static const double origin = steady_us();  // keeps the doubles small: ns resolution
  return origin;
}

namespace {

// A steady_clock read bracketed by two counter reads, the tightest of a few tries: the
// counter value is the bracket's midpoint.
ReadPair paired_read() {
  ReadPair best;
  uint64_t best_gap = std::numeric_limits<uint64_t>::max();
  for (int i = 0; i < 32; ++i) {
#if defined(__x86_64__)
    const uint64_t before = __rdtsc();
    const double s = steady_us();
    const uint64_t after = __rdtsc();
    if (after > before && after - before < best_gap) {
      best_gap = after - before;
      best = {before + (after - before) / 2, s};
    }
#endif
  }
  return best;
}

}  // namespace

HostTimer HostTimer::choose(const char* setting) {
  const std::string_view want = setting != nullptr ? setting : "";
  if (!want.empty() && want != "auto" && want != "tsc" && want != "steady")
    throw std::runtime_error(fmt::format(
        "COMMBENCH_TIMER='{}' is not one of auto, tsc, steady; unset it to let commbench choose", want));
  HostTimer t;
  t.why_ = "COMMBENCH_TIMER=steady";
  if (want == "steady") return t;
  if (!counter_is_invariant()) {
    if (want == "tsc")
      throw std::runtime_error(
          "COMMBENCH_TIMER=tsc: this CPU has no invariant time-stamp counter (constant_tsc and "
          "nonstop_tsc in /proc/cpuinfo); unset COMMBENCH_TIMER or set it to steady");
    t.why_ = "no invariant time-stamp counter";
    return t;
  }
  // ~20 ms against steady_clock: both ends are known to tens of ns, so the rate is good to
  // a few parts per million.
  const ReadPair a = paired_read();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const ReadPair b = paired_read();
  const double mhz = static_cast<double>(b.ticks - a.ticks) / (b.steady_us - a.steady_us);
  if (!(b.ticks > a.ticks) || !(mhz > 100.0 && mhz < 20000.0)) {
    if (want == "tsc")
      throw std::runtime_error(fmt::format(
          "COMMBENCH_TIMER=tsc: calibrating the time-stamp counter gave {:.1f} MHz, which is not "
          "plausible; unset COMMBENCH_TIMER or set it to steady", mhz));
    t.why_ = fmt::format("time-stamp counter calibration implausible ({:.1f} MHz)", mhz);
    return t;
  }
  t.tsc_ = true;
  t.us_per_tick_ = 1.0 / mhz;
  t.ns_per_tick_ = 1e3 / mhz;
  // The second paired read anchors the counter to CLOCK_MONOTONIC (to tens of ns).
  t.origin_ticks_ = b.ticks;
  t.anchor_ns_ = static_cast<int64_t>(b.steady_us * 1e3);
  return t;
}

const HostTimer& HostTimer::get() {
  static const HostTimer timer = choose(std::getenv("COMMBENCH_TIMER"));
  return timer;
}

std::string HostTimer::describe() const {
  if (tsc_) return fmt::format("tsc (invariant, {:.3f} MHz, calibrated against steady_clock)", counter_mhz());
  return fmt::format("steady_clock ({})", why_);
}

double HostTimer::resolution_ns() const {
  if (tsc_) return us_per_tick_ * 1e3;
  timespec ts{};
  ::clock_getres(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

}  // namespace commbench
