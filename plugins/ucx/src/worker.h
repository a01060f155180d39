// One UCP worker and the progress engine every wait goes through: spinning on
// ucp_worker_progress (progress = polling) or sleeping on the worker's event fd between
// progress calls (progress = wait). Every wait has a deadline.
#pragma once

#include <sched.h>

#include <chrono>
#include <vector>

#include <ucp/api/ucp.h>

#include "options.h"

namespace commbench::ucx_backend {

using Clock = std::chrono::steady_clock;

// When a wait gives up: a point in time, or a timeout counted from the first time the wait looks
// at the clock. The clock is not read when the deadline is made: on a VM that read costs as much
// as a shared-memory message, and a message that completes within the first spins never needs it.
class Deadline {
 public:
  Deadline(Clock::time_point at) : at_(at), resolved_(true) {}  // NOLINT: implicit on purpose
  static Deadline after(Clock::duration timeout) {
    Deadline d(Clock::time_point{});
    d.resolved_ = false;
    d.timeout_ = timeout;
    return d;
  }
  Clock::time_point at() {
    if (!resolved_) {
      at_ = Clock::now() + timeout_;
      resolved_ = true;
    }
    return at_;
  }
  bool passed() { return Clock::now() >= at(); }

 private:
  Clock::time_point at_;
  Clock::duration timeout_{};
  bool resolved_;
};

class Worker {
 public:
  Worker(ucp_context_h context, ucs_thread_mode_t thread_mode, ProgressMode progress);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  ucp_worker_h get() const { return worker_; }
  // This worker's address, to be handed to the peers.
  std::vector<unsigned char> address() const;

  // One round of progress; true when something happened.
  bool progress() { return ucp_worker_progress(worker_) != 0; }

  // Progresses until done() is true or the deadline passes; returns done(). Inline: it is
  // the latency-critical loop of every small message. The deadline is the caller's, so that
  // once a wait has started its clock the next wait on the same deadline keeps it.
  template <class Done>
  [[gnu::always_inline]] bool progress_until(Done&& done, Deadline& deadline) {
    for (unsigned rounds = 0;;) {
      // done() after every progress call: a completed receive is acted on without another
      // round over every transport first.
      const bool busy = progress();
      if (done()) return true;
      if (mode_ == ProgressMode::kYield && !busy) sched_yield();  // a peer sharing this core may run
      // Reading the clock costs as much as a round of progress (~30 ns with kvm-clock), and a
      // message that lands during it waits: when polling, look at it every 64 rounds only
      // (a few microseconds late at worst against deadlines of seconds). Busy rounds count too,
      // so that a peer that never stops sending cannot keep a wait from timing out.
      if (mode_ != ProgressMode::kWait && ++rounds % 64 != 0) continue;
      if (deadline.passed()) return done();
      if (mode_ == ProgressMode::kWait && !busy) sleep_for_events(deadline.at());  // busy: more may be pending
    }
  }

 private:
  void sleep_for_events(Clock::time_point deadline);

  ucp_worker_h worker_ = nullptr;
  ProgressMode mode_;
  int event_fd_ = -1;
};

}  // namespace commbench::ucx_backend
