#include "device/gpu_device.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "device/gpu_binding.h"

namespace commbench {

std::unique_ptr<GpuDevice> GpuDevice::open(int local_rank, int local_world, std::optional<int> option,
                                           bool shared, std::string* unusable) {
  std::string why;
  const cuda::Runtime* rt = cuda::Runtime::get(&why);
  if (!rt) {
    *unusable = why;
    return nullptr;
  }
  int count = 0;
  const cuda::Error e = rt->GetDeviceCount(&count);
  if (e != cuda::kSuccess || count == 0) {
    // No driver (cudaErrorInsufficientDriver), no device (cudaErrorNoDevice): this host cannot
    // run CUDA cases; any other error is reported the same way, with its name.
    *unusable = e != cuda::kSuccess
                    ? fmt::format("no usable CUDA device: cudaGetDeviceCount failed with {}", rt->describe(e))
                    : std::string("no CUDA device is visible (cudaGetDeviceCount: 0)");
    return nullptr;
  }
  const DeviceChoice choice =
      choose_device(local_rank, local_world, count, option, std::getenv("CUDA_VISIBLE_DEVICES"), shared);
  if (!choice.error.empty()) throw GpuBindingError("GPU binding: " + choice.error);
  std::unique_ptr<GpuDevice> d(new GpuDevice(*rt, choice.device));
  d->how_ = choice.how;
  rt->check(rt->SetDevice(d->index_), "cudaSetDevice");
  std::vector<char> prop(cuda::kDevicePropBufferBytes, 0);
  rt->check(rt->GetDeviceProperties(prop.data(), d->index_), "cudaGetDeviceProperties");
  d->name_.assign(prop.data(), strnlen(prop.data(), cuda::kDevicePropNameBytes));
  rt->check(rt->DeviceGetAttribute(&d->cc_major_, cuda::kAttrComputeCapabilityMajor, d->index_),
            "cudaDeviceGetAttribute");
  rt->check(rt->DeviceGetAttribute(&d->cc_minor_, cuda::kAttrComputeCapabilityMinor, d->index_),
            "cudaDeviceGetAttribute");
  rt->check(rt->StreamCreateWithFlags(&d->stream_, cuda::kStreamNonBlocking), "cudaStreamCreateWithFlags");
  return d;
}

GpuDevice::~GpuDevice() {
  // Nothing may still run on the stream when its events and the stream go away.
  if (stream_) rt_.StreamSynchronize(stream_);
  for (cuda::Event ev : events_) rt_.EventDestroy(ev);
  if (stream_) rt_.StreamDestroy(stream_);
}

size_t GpuDevice::free_bytes() const {
  size_t free = 0, total = 0;
  rt_.check(rt_.MemGetInfo(&free, &total), "cudaMemGetInfo");
  return free;
}

size_t GpuDevice::total_bytes() const {
  size_t free = 0, total = 0;
  rt_.check(rt_.MemGetInfo(&free, &total), "cudaMemGetInfo");
  return total;
}

void* GpuDevice::alloc_device(size_t bytes) const {
  void* p = nullptr;
  rt_.check(rt_.Malloc(&p, bytes ? bytes : 1), "cudaMalloc");
  return p;
}

void GpuDevice::free_device(void* p) const {
  if (p) rt_.check(rt_.Free(p), "cudaFree");
}

void* GpuDevice::alloc_pinned(size_t bytes) const {
  void* p = nullptr;
  rt_.check(rt_.HostAlloc(&p, bytes ? bytes : 1, cuda::kHostAllocDefault), "cudaHostAlloc");
  return p;
}

void GpuDevice::free_pinned(void* p) const {
  if (p) rt_.check(rt_.FreeHost(p), "cudaFreeHost");
}

void GpuDevice::copy_to_host_on_stream(void* dst, const void* src, size_t bytes) const {
  if (bytes)
    rt_.check(rt_.MemcpyAsync(dst, src, bytes, cuda::kMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (device to host)");
  synchronize();
}

void GpuDevice::copy_to_device_on_stream(void* dst, const void* src, size_t bytes) const {
  if (bytes)
    rt_.check(rt_.MemcpyAsync(dst, src, bytes, cuda::kMemcpyHostToDevice, stream_), "cudaMemcpyAsync (host to device)");
  synchronize();
}

void GpuDevice::synchronize() const { rt_.check(rt_.StreamSynchronize(stream_), "cudaStreamSynchronize"); }

void GpuDevice::record_event(size_t i, bool capturing) {
  const cuda::Event ev = event(i);
  if (capturing)
    rt_.check(rt_.EventRecordWithFlags(ev, stream_, cuda::kEventRecordExternal), "cudaEventRecordWithFlags (external)");
  else
    rt_.check(rt_.EventRecord(ev, stream_), "cudaEventRecord");
}

cuda::Event GpuDevice::event(size_t i) {
  while (events_.size() <= i) {
    cuda::Event ev = nullptr;
    rt_.check(rt_.EventCreateWithFlags(&ev, cuda::kEventDefault), "cudaEventCreateWithFlags");
    events_.push_back(ev);
  }
  return events_[i];
}

std::string GpuDevice::pci_bus_id() const {
  char bus[64] = {0};
  return rt_.DeviceGetPCIBusId(bus, sizeof(bus) - 1, index_) == cuda::kSuccess ? std::string(bus) : std::string();
}

nlohmann::json GpuDevice::describe() const {
  nlohmann::json j;
  j["device"] = index_;
  j["binding"] = how_;
  j["name"] = name_;
  j["compute_capability"] = fmt::format("{}.{}", cc_major_, cc_minor_);
  if (const std::string bus = pci_bus_id(); !bus.empty()) j["pci_bus_id"] = bus;
  int v = 0;
  if (rt_.RuntimeGetVersion(&v) == cuda::kSuccess) j["cuda_runtime_version"] = v;
  if (rt_.DriverGetVersion(&v) == cuda::kSuccess) j["cuda_driver_version"] = v;
  j["cuda_runtime_library"] = rt_.path();
  j["total_memory_bytes"] = total_bytes();
  if (const char* vis = std::getenv("CUDA_VISIBLE_DEVICES")) j["cuda_visible_devices"] = vis;
  return j;
}

}  // namespace commbench
