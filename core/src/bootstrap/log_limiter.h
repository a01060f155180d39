// How many lines the store may log: every connection that is refused is worth a line, but anyone
// who can reach the port can open tens of thousands a second, and under a batch system stderr is a
// file. A window allows a burst of lines; the rest are counted and summed up in one line when the
// next window opens (or the store stops).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace commbench {

class LogLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kBurst = 20;
  static constexpr std::chrono::seconds kWindow{10};

  // What to print before a line at `now` (a summary of the lines held back in the window that
  // ended, or nothing), and whether the line itself may be printed.
  struct Verdict {
    std::optional<std::string> summary;
    bool print = false;
  };
  Verdict admit(Clock::time_point now) {
    Verdict v;
    if (!window_start_ || now - *window_start_ >= kWindow) {
      v.summary = held_back_summary();
      window_start_ = now;
      lines_ = 0;
      held_back_ = 0;
    }
    v.print = lines_ < kBurst;
    if (v.print) ++lines_;
    else ++held_back_;
    return v;
  }
  // The summary of what the current window held back, if anything; the count starts again.
  std::optional<std::string> held_back_summary() {
    if (held_back_ == 0) return std::nullopt;
    std::string s = fmt::format("{} more message(s) like the above in {} s not shown (at most {} per {} s): "
                                "something is opening connections to the store that are refused",
                                held_back_, kWindow.count(), kBurst, kWindow.count());
    held_back_ = 0;
    return s;
  }

 private:
  std::optional<Clock::time_point> window_start_;
  size_t lines_ = 0;
  size_t held_back_ = 0;
};

}  // namespace commbench
