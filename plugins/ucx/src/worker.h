// One UCP worker and the progress engine every wait goes through: spinning on
// ucp_worker_progress (progress = polling) or sleeping on the worker's event fd between
// progress calls (progress = wait). Every wait has a deadline.
#pragma once

#include <chrono>
#include <vector>

#include <ucp/api/ucp.h>

#include "options.h"

namespace commbench::ucx_backend {

using Clock = std::chrono::steady_clock;

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
  // the latency-critical loop of every small message.
  template <class Done>
  bool progress_until(Done&& done, Clock::time_point deadline) {
    for (;;) {
      while (progress()) {
      }
      if (done()) return true;
      if (Clock::now() >= deadline) return done();
      if (mode_ == ProgressMode::kWait) sleep_for_events(deadline);
    }
  }

 private:
  void sleep_for_events(Clock::time_point deadline);

  ucp_worker_h worker_ = nullptr;
  ProgressMode mode_;
  int event_fd_ = -1;
};

}  // namespace commbench::ucx_backend
