// The clock of every host-side timing in a worker. Where the CPU has an invariant time-stamp
// counter (x86-64 with constant_tsc and nonstop_tsc), it reads the counter, calibrated once per
// process against steady_clock; elsewhere it is steady_clock itself.
//
// Why not steady_clock everywhere: under kvm-clock (most cloud VMs) clock_gettime costs ~30 ns
// and is a serialising read, and a pingpong sample takes two of them. Measured on the 2-vCPU
// development VM that was +40 ns on a 0.5 us half round trip, most of the gap to ucx_perftest,
// which times with the counter too. COMMBENCH_TIMER=steady forces the portable clock.
#pragma once

#include <cstdint>
#include <string>

namespace commbench {

class HostTimer {
 public:
  // The process's timer, chosen and calibrated on first use (~20 ms when it calibrates).
  // Throws with what to do when COMMBENCH_TIMER names something unknown or unavailable.
  static const HostTimer& get();

  // Microseconds since an arbitrary origin; only differences mean anything.
  double now_us() const {
    return tsc_ ? static_cast<double>(read_counter() - origin_ticks_) * us_per_tick_ : steady_now_us();
  }
  // Nanoseconds on the host's CLOCK_MONOTONIC timeline (the counter is anchored to it when
  // calibrated): the timestamps of traces and execution_log.csv, which clock_sync.h puts on rank
  // 0's timeline. A time namespace's monotonic offset (unshare --time) shows here as it does in
  // steady_clock, which is how the multi-host test skews a host's clock.
  int64_t now_ns() const {
    return tsc_ ? anchor_ns_ + static_cast<int64_t>(static_cast<double>(read_counter() - origin_ticks_) * ns_per_tick_)
                : steady_ns();
  }
  bool uses_counter() const { return tsc_; }
  double counter_mhz() const { return tsc_ ? 1.0 / us_per_tick_ : 0.0; }
  // For metadata: which clock, and for the counter its calibrated frequency.
  std::string describe() const;
  // The smallest step it can show, in ns: one counter tick, or clock_getres(CLOCK_MONOTONIC).
  double resolution_ns() const;

  // Exposed for tests: the choice as COMMBENCH_TIMER=`setting` would make it.
  static HostTimer choose(const char* setting);

 private:
  HostTimer() = default;
  static uint64_t read_counter() {
#if defined(__x86_64__)
    return __builtin_ia32_rdtsc();
#else
    return 0;  // never used: choose() selects the counter on x86-64 only
#endif
  }
  static double steady_now_us();
  static int64_t steady_ns();
  static double steady_origin_us();
  bool tsc_ = false;
  double us_per_tick_ = 0.0;
  uint64_t origin_ticks_ = 0;  // differences from it stay small, exact in a double
  double ns_per_tick_ = 0.0;
  int64_t anchor_ns_ = 0;      // CLOCK_MONOTONIC at origin_ticks_
  std::string why_;            // why steady_clock, when it is
};

}  // namespace commbench
