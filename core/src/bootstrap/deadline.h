// A point in time after which a blocking store call gives up. A negative timeout means "no
// limit" (the ABI's convention); this type keeps that case out of clock arithmetic, where
// now() + Millis::max() would overflow.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace commbench {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  static Deadline after(std::chrono::milliseconds timeout) {
    Deadline d;
    if (timeout.count() >= 0) {
      d.unlimited_ = false;
      d.at_ = Clock::now() + timeout;
    }
    return d;
  }
  static Deadline never() { return Deadline{}; }

  bool unlimited() const { return unlimited_; }
  bool passed() const { return !unlimited_ && Clock::now() >= at_; }
  Clock::time_point at() const { return unlimited_ ? Clock::time_point::max() : at_; }

  // Milliseconds left, rounded up so a poll() on it never returns early; -1 when unlimited
  // (which is also poll()'s "forever"). Capped at int32 because poll() takes an int.
  int64_t remaining_ms() const {
    if (unlimited_) return -1;
    auto left = std::chrono::ceil<std::chrono::milliseconds>(at_ - Clock::now()).count();
    return std::clamp<int64_t>(left, 0, INT32_MAX);
  }

  // This deadline pushed back by `grace`: how long a client waits for the server's own TIMEOUT
  // reply before concluding the server itself is stuck.
  Deadline extended(std::chrono::milliseconds grace) const {
    if (unlimited_) return *this;
    Deadline d = *this;
    d.at_ += grace;
    return d;
  }

 private:
  bool unlimited_ = true;
  Clock::time_point at_{};
};

}  // namespace commbench
