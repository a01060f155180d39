#include "measure/iteration_clock.h"

#include <chrono>
#include <thread>

#include "plugin/plugin_error.h"

namespace commbench {

void wait_for_event(GpuDevice& gpu, size_t index, int32_t timeout_ms) {
  const cuda::Runtime& rt = gpu.rt();
  const cuda::Event end = gpu.event(index);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const cuda::Error e = rt.EventQuery(end);
    if (e == cuda::kSuccess) return;
    if (e != cuda::kErrorNotReady) rt.check(e, "cudaEventQuery");
    if (std::chrono::steady_clock::now() >= deadline)
      throw PluginError(CB_ERR_TIMEOUT, cuda::kErrorSource, "cudaEventQuery",
                        "the iteration's work on the stream did not complete within the timeout");
    std::this_thread::yield();
  }
}

void wait_for_stream(GpuDevice& gpu, int32_t timeout_ms) {
  const cuda::Runtime& rt = gpu.rt();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    const cuda::Error e = rt.StreamQuery(gpu.stream());
    if (e == cuda::kSuccess) return;
    if (e != cuda::kErrorNotReady) rt.check(e, "cudaStreamQuery");
    if (std::chrono::steady_clock::now() >= deadline)
      throw PluginError(CB_ERR_TIMEOUT, cuda::kErrorSource, "cudaStreamQuery",
                        "the work on the stream did not complete within the timeout");
    std::this_thread::yield();
  }
}

IterationClock::IterationClock(TimingMethod method, GpuDevice* gpu)
    : method_(method), gpu_(gpu), timer_(HostTimer::get()) {
  if (method_ != TimingMethod::Host && !gpu_) method_ = TimingMethod::Host;
}

void IterationClock::start_stream_ordered() {
  if (method_ == TimingMethod::CudaEvent) {
    gpu_->rt().check(gpu_->rt().EventRecord(gpu_->event(0), gpu_->stream()), "cudaEventRecord");
    return;
  }
  if (!unread_) t0_ = timer_.now_us();
}

void IterationClock::posted_stream_ordered() {
  gpu_->rt().check(gpu_->rt().EventRecord(gpu_->event(1), gpu_->stream()), "cudaEventRecord");
}

double IterationClock::stop_stream_ordered(int32_t timeout_ms) {
  const cuda::Runtime& rt = gpu_->rt();
  if (method_ == TimingMethod::HostStreamSync) {
    gpu_->synchronize();
    return unread_ ? 0.0 : timer_.now_us() - t0_;
  }
  wait_for_event(*gpu_, 1, timeout_ms);
  const cuda::Event end = gpu_->event(1);
  float ms = 0;
  rt.check(rt.EventElapsedTime(&ms, gpu_->event(0), end), "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1000.0;
}

}  // namespace commbench
