// Page faults of the measuring thread inside the timed loops (record field timed_page_faults,
// docs/output.md): a fault costs microseconds, tens on some VMs, so a case that takes them has
// also timed memory being mapped.
#pragma once

#include <sys/resource.h>

#include <cstdint>

namespace commbench {

// Minor and major faults the calling thread has taken so far; -1 when getrusage fails. Per
// thread: the plugin's and the worker's other threads do not run the timed loop.
inline int64_t thread_page_faults() {
  rusage u{};
  if (getrusage(RUSAGE_THREAD, &u) != 0) return -1;
  return static_cast<int64_t>(u.ru_minflt) + static_cast<int64_t>(u.ru_majflt);
}

// Adds the faults taken during its lifetime to `total`. A reading that fails makes `total` -1
// (not measured) for good, rather than a count that looks real.
class PageFaultSpan {
 public:
  explicit PageFaultSpan(int64_t& total) : total_(total), start_(thread_page_faults()) {}
  ~PageFaultSpan() {
    const int64_t end = thread_page_faults();
    if (total_ < 0) return;
    total_ = start_ < 0 || end < 0 ? -1 : total_ + (end - start_);
  }
  PageFaultSpan(const PageFaultSpan&) = delete;
  PageFaultSpan& operator=(const PageFaultSpan&) = delete;

 private:
  int64_t& total_;
  int64_t start_;
};

}  // namespace commbench
