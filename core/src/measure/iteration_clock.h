// How one timed iteration is measured (the record's `timing` field names the method):
//  - host: the worker's host timer from before the first post to after the last wait;
//  - cuda_event: stream-ordered backends; CUDA events recorded on the worker's stream before the
//    first post and after the last one (after group_end when the posts are grouped), elapsed
//    time from cudaEventElapsedTime once the end event completed — the GPU's view, without the
//    host's launch and polling overheads;
//  - host_stream_sync: stream-ordered backends; host timer from before the first post to after a
//    cudaStreamSynchronize that follows the waits — what a framework sees that syncs per op.
// How the iterations are laid out (batch, per_iteration, graph) is the method's business
// (common/timing_method.h, OpExecutor::run_back_to_back and run_graph), not the clock's.
// The events come from the device's pool: none is created on the timed path.
#pragma once

#include <cstdint>

#include "common/timing_method.h"
#include "device/gpu_device.h"
#include "measure/host_timer.h"

namespace commbench {

// Waits until the device pool's event `index` completed, polling rather than blocking in
// cudaEventSynchronize: an op that never completes must end in a timeout with a message, not in
// a worker blocked until the agent kills it.
void wait_for_event(GpuDevice& gpu, size_t index, int32_t timeout_ms);
// The same for all work on the worker's stream (cudaStreamQuery). After a graph launch the
// graph's events may still carry their previous state, so their queries prove nothing.
void wait_for_stream(GpuDevice& gpu, int32_t timeout_ms);

class IterationClock {
 public:
  // `gpu` is required for the CUDA methods.
  IterationClock(TimingMethod method, GpuDevice* gpu);
  // The host clock's path is inline: a sub-microsecond round trip calls these once each.
  void start() {  // before the first post
    if (method_ != TimingMethod::Host) return start_stream_ordered();
    if (!unread_) t0_ = timer_.now_us();
  }
  void posted() {  // after the last post (and group_end), before any wait
    if (method_ == TimingMethod::CudaEvent) posted_stream_ordered();
  }
  double stop(int32_t timeout_ms) {  // after the waits: the iteration's time in microseconds
    if (method_ != TimingMethod::Host) return stop_stream_ordered(timeout_ms);
    return unread_ ? 0.0 : timer_.now_us() - t0_;
  }

  // While one lives, the host methods read no timer (stop() returns 0; host_stream_sync still
  // synchronises): batch times consecutive completions itself, and each timer read costs ~25 ns
  // on a VM, a few percent of a small shared-memory op.
  class Unread {
   public:
    explicit Unread(IterationClock& c) : c_(c), was_(c.unread_) { c.unread_ = c.method_ != TimingMethod::CudaEvent; }
    ~Unread() { c_.unread_ = was_; }
    Unread(const Unread&) = delete;
    Unread& operator=(const Unread&) = delete;

   private:
    IterationClock& c_;
    bool was_;
  };

 private:
  void start_stream_ordered();
  void posted_stream_ordered();
  double stop_stream_ordered(int32_t timeout_ms);

  TimingMethod method_;
  GpuDevice* gpu_;
  const HostTimer& timer_;
  double t0_ = 0;
  bool unread_ = false;
};

}  // namespace commbench
