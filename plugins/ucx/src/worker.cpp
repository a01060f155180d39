#include "worker.h"

#include <poll.h>

#include <algorithm>

#include "errors.h"

namespace commbench::ucx_backend {

Worker::Worker(ucp_context_h context, ucs_thread_mode_t thread_mode, ProgressMode progress)
    : mode_(progress) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = thread_mode;
  check_ucs("ucp_worker_create", ucp_worker_create(context, &params, &worker_));
  if (mode_ == ProgressMode::kWait) {
    const ucs_status_t s = ucp_worker_get_efd(worker_, &event_fd_);
    if (s != UCS_OK) {
      ucp_worker_destroy(worker_);
      fail_ucs("ucp_worker_get_efd", s, "progress = \"wait\" needs an event fd; use \"polling\"");
    }
  }
}

Worker::~Worker() {
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
}

std::vector<unsigned char> Worker::address() const {
  ucp_address_t* address = nullptr;
  size_t length = 0;
  check_ucs("ucp_worker_get_address", ucp_worker_get_address(worker_, &address, &length));
  const auto* bytes = reinterpret_cast<const unsigned char*>(address);
  std::vector<unsigned char> copy(bytes, bytes + length);
  ucp_worker_release_address(worker_, address);
  return copy;
}

void Worker::sleep_for_events(Clock::time_point deadline) {
  // Arm first: UCS_ERR_BUSY means events are already pending and progress must run again.
  const ucs_status_t s = ucp_worker_arm(worker_);
  if (s == UCS_ERR_BUSY) return;
  check_ucs("ucp_worker_arm", s);
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  // Wake at least every 100 ms so that the deadline and peer failures are noticed.
  const int timeout_ms = static_cast<int>(std::clamp<int64_t>(left.count(), 0, 100));
  pollfd fd{event_fd_, POLLIN, 0};
  (void)poll(&fd, 1, timeout_ms);
}

}  // namespace commbench::ucx_backend
