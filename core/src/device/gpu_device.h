// The worker's GPU: the loaded runtime, the bound device, one non-blocking stream for the
// stream-ordered backends' ops and the core's copies, and a pool of timing events. Opened only
// when an execution uses memory = "cuda" (docs/gpu.md).
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "device/cuda_runtime.h"

namespace commbench {

// CUDA works but the binding rule finds no device for this rank (more local ranks than GPUs, a
// `device` option beyond the visible ones): the execution is reported unavailable with the
// message, like a backend that cannot run here, and the job goes on (a world-size sweep larger
// than the host's GPU count skips the sizes that do not fit, as NCCL users expect).
class GpuBindingError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class GpuDevice {
 public:
  // Loads the runtime and binds the device (device/gpu_binding.h). Returns nullptr with
  // `*unusable` set when this host cannot run CUDA cases (no runtime, no device, no driver):
  // those cases are then "unsupported". Throws GpuBindingError when the binding rule fails.
  // `shared`: oversubscribe_gpu (local ranks may share a device, device/gpu_binding.h rule 4).
  static std::unique_ptr<GpuDevice> open(int local_rank, int local_world, std::optional<int> option,
                                         bool shared, std::string* unusable);
  ~GpuDevice();
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  const cuda::Runtime& rt() const { return rt_; }
  int index() const { return index_; }
  cuda::Stream stream() const { return stream_; }
  int compute_capability() const { return cc_major_ * 10 + cc_minor_; }  // 90 for sm_90
  std::string pci_bus_id() const;  // "0000:19:00.0"; "" when the runtime cannot say

  // cudaMemGetInfo of the bound device.
  size_t free_bytes() const;
  size_t total_bytes() const;

  // Plain allocations (the core's own: device buffers when the backend has no allocator,
  // pinned staging buffers). Allocation failure throws PluginError RESOURCE_EXHAUSTED.
  void* alloc_device(size_t bytes) const;
  void free_device(void* p) const;
  void* alloc_pinned(size_t bytes) const;
  void free_pinned(void* p) const;

  // Copies on the worker's stream, then waits for the stream: check patterns in, results out,
  // the staging copies of a timed iteration. Never a plain cudaMemcpy: it runs on the legacy
  // stream, which CUDA does not order with our non-blocking one, and from pageable memory it may
  // return before the data has landed on the device.
  void copy_to_host_on_stream(void* dst, const void* src, size_t bytes) const;
  void copy_to_device_on_stream(void* dst, const void* src, size_t bytes) const;
  void synchronize() const;

  // Timing events, created once and reused (creating one per op would sit on the timed path).
  cuda::Event event(size_t i);
  // Records pool event `i` on the stream. While the stream is being captured the record becomes
  // a node of the graph (cudaEventRecordExternal): a plain record would leave the event
  // "captured", and every query of it would fail with cudaErrorCapturedEvent.
  void record_event(size_t i, bool capturing);

  // What the metadata says about this device (runtime, driver, name, binding rule used).
  nlohmann::json describe() const;

 private:
  GpuDevice(const cuda::Runtime& rt, int index) : rt_(rt), index_(index) {}
  const cuda::Runtime& rt_;
  int index_;
  std::string how_;
  std::string name_;
  int cc_major_ = 0, cc_minor_ = 0;
  cuda::Stream stream_ = nullptr;
  std::vector<cuda::Event> events_;
};

}  // namespace commbench
