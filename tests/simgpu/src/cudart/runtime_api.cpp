// Exported CUDA runtime entry points: devices, errors, memory and copies.
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>
#include <cstdio>
#include <cstring>

#include "../common/knobs.hpp"
#include "../common/simgpu_private.h"
#include "api_common.hpp"

namespace simgpu {

int& current_ordinal() {
  thread_local int ordinal = 0;
  return ordinal;
}

cudaError_t& last_error() {
  thread_local cudaError_t e = cudaSuccess;
  return e;
}

namespace {

std::atomic<int> g_fault_rank{-2};  // -2: not told by NCCL yet
std::atomic<long long> g_mallocs{0};

const char* kDeviceName = "commbench simulated GPU (not a real device)";

cudaError_t check_device() {
  if (Devices::get().visible_count() == 0) return cudaErrorNoDevice;
  if (current_physical() < 0) return cudaErrorInvalidDevice;
  return cudaSuccess;
}

// Builds the copy of [src, src+n) to [dst, dst+n), checking both ranges and the direction.
cudaError_t plan_copy(void* dst, const void* src, size_t n, cudaMemcpyKind kind, Task* out) {
  Devices& d = Devices::get();
  PtrInfo di = d.classify(dst, n), si = d.classify(src, n);
  if (di.kind == PtrKind::BadDevice || si.kind == PtrKind::BadDevice) {
    SIMGPU_LOG("cudart: copy of %zu bytes %p -> %p leaves a device allocation", n, src, dst);
    return cudaErrorInvalidValue;
  }
  if ((dst == nullptr || src == nullptr) && n > 0) return cudaErrorInvalidValue;
  const bool dd = di.kind == PtrKind::Device, sd = si.kind == PtrKind::Device;
  bool ok = true;
  switch (kind) {
    case cudaMemcpyHostToHost: ok = !dd && !sd; break;
    case cudaMemcpyHostToDevice: ok = dd && !sd; break;
    case cudaMemcpyDeviceToHost: ok = !dd && sd; break;
    case cudaMemcpyDeviceToDevice: ok = dd && sd; break;
    case cudaMemcpyDefault: break;
    default: return cudaErrorInvalidMemcpyDirection;
  }
  if (!ok) {
    SIMGPU_LOG("cudart: memcpy kind %d does not match the pointers (dst %s, src %s)", static_cast<int>(kind),
               dd ? "device" : "host", sd ? "device" : "host");
    return cudaErrorInvalidValue;
  }
  char* dv = di.view;
  const char* sv = si.view;
  *out = [dv, sv, n] {
    if (n > 0) std::memmove(dv, sv, n);
  };
  return cudaSuccess;
}

cudaError_t plan_memset(void* dst, int value, size_t n, Task* out) {
  PtrInfo di = Devices::get().classify(dst, n);
  if (di.kind != PtrKind::Device) return cudaErrorInvalidValue;
  char* dv = di.view;
  *out = [dv, value, n] { std::memset(dv, value, n); };
  return cudaSuccess;
}

Stream* stream_or_null(cudaStream_t s) { return Streams::get().resolve(s, current_physical()); }

}  // namespace
}  // namespace simgpu

using namespace simgpu;

// ---- private interface for the simulated NCCL ------------------------------------------------------
SIMGPU_API void* simgpu_device_view(const void* dev, size_t bytes, int* physical) {
  PtrInfo i = Devices::get().classify(dev, bytes);
  if (i.kind != PtrKind::Device) return nullptr;
  if (physical != nullptr) *physical = i.physical;
  return i.view;
}
SIMGPU_API cudaError_t simgpu_reserve_device_memory(int physical, size_t bytes, void** out) {
  return Devices::get().malloc_device(physical, bytes, out);
}
SIMGPU_API void simgpu_release_device_memory(void* p) {
  if (p != nullptr) Devices::get().free_device(p);
}
SIMGPU_API int simgpu_physical_device(int ordinal) { return Devices::get().physical_of(ordinal); }
SIMGPU_API int simgpu_compute_capability() { return Devices::get().cc_major() * 10 + Devices::get().cc_minor(); }
SIMGPU_API void simgpu_set_fault_rank(int rank) { g_fault_rank = rank; }
SIMGPU_API int simgpu_fault_applies() {
  const char* want = env("SIMGPU_FAULT_RANK");
  if (want == nullptr) return 1;
  int r = g_fault_rank.load();
  if (r == -2) r = launcher_rank();
  return r == std::atoi(want) ? 1 : 0;
}

// ---- devices -------------------------------------------------------------------------------------------
SIMGPU_API cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return fail(cudaErrorInvalidValue);
  *count = Devices::get().visible_count();
  return *count == 0 ? fail(cudaErrorNoDevice) : cudaSuccess;
}

SIMGPU_API cudaError_t cudaSetDevice(int device) {
  if (Devices::get().visible_count() == 0) return fail(cudaErrorNoDevice);
  if (Devices::get().physical_of(device) < 0) return fail(cudaErrorInvalidDevice);
  current_ordinal() = device;
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = check_device()) return fail(e);
  *device = current_ordinal();
  return cudaSuccess;
}

static void fill_uuid(int physical, char out[16]) {
  // Deterministic per physical index: "GPU-51m0" prefix in the printed form (bytes 51 6d 30 ..).
  const unsigned char bytes[16] = {0x51, 0x6d, 0x30, 0x00, 0x00, 0x00, 0x40, 0x00,
                                   0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, static_cast<unsigned char>(physical)};
  std::memcpy(out, bytes, 16);
}

SIMGPU_API cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (prop == nullptr) return fail(cudaErrorInvalidValue);
  Devices& d = Devices::get();
  const int phys = d.physical_of(device);
  if (phys < 0) return fail(d.visible_count() == 0 ? cudaErrorNoDevice : cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof(*prop));
  std::snprintf(prop->name, sizeof(prop->name), "%s", kDeviceName);
  fill_uuid(phys, prop->uuid.bytes);
  prop->totalGlobalMem = d.memory_per_device();
  prop->sharedMemPerBlock = 48 << 10;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 0x7fffffff;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->totalConstMem = 65536;
  prop->major = d.cc_major();
  prop->minor = d.cc_minor();
  prop->multiProcessorCount = 132;
  prop->canMapHostMemory = 1;
  prop->concurrentKernels = 1;
  prop->pciBusID = 0x10 + phys;
  prop->pciDeviceID = 0;
  prop->pciDomainID = 0;
  prop->asyncEngineCount = 2;
  prop->unifiedAddressing = 1;
  prop->memoryBusWidth = 5120;
  prop->l2CacheSize = 50 << 20;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->hostRegisterSupported = 1;
  return cudaSuccess;
}

// Not in the CUDA 13 runtime (it was the CUDA 12 ABI name), kept for loaders that probe it.
SIMGPU_API cudaError_t cudaGetDeviceProperties_v2(cudaDeviceProp* prop, int device) {
  return cudaGetDeviceProperties(prop, device);
}

SIMGPU_API cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (value == nullptr) return fail(cudaErrorInvalidValue);
  cudaDeviceProp p;
  if (cudaError_t e = cudaGetDeviceProperties(&p, device)) return e;
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *value = p.minor; break;
    case cudaDevAttrMultiProcessorCount: *value = p.multiProcessorCount; break;
    case cudaDevAttrPciBusId: *value = p.pciBusID; break;
    case cudaDevAttrPciDeviceId: *value = p.pciDeviceID; break;
    case cudaDevAttrPciDomainId: *value = p.pciDomainID; break;
    case cudaDevAttrWarpSize: *value = p.warpSize; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = p.maxThreadsPerBlock; break;
    case cudaDevAttrUnifiedAddressing: *value = 1; break;
    case cudaDevAttrCanMapHostMemory: *value = 1; break;
    case cudaDevAttrConcurrentKernels: *value = 1; break;
    case cudaDevAttrAsyncEngineCount: *value = p.asyncEngineCount; break;
    case cudaDevAttrGlobalMemoryBusWidth: *value = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: *value = p.l2CacheSize; break;
    case cudaDevAttrIntegrated: *value = 0; break;
    case cudaDevAttrManagedMemory: *value = 0; break;
    case cudaDevAttrHostRegisterSupported: *value = 1; break;
    default: *value = 0; break;  // features the simulation does not have
  }
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  const int phys = Devices::get().physical_of(device);
  if (pciBusId == nullptr || len <= 0) return fail(cudaErrorInvalidValue);
  if (phys < 0) return fail(cudaErrorInvalidDevice);
  std::snprintf(pciBusId, static_cast<size_t>(len), "0000:%02X:00.0", 0x10 + phys);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaDriverGetVersion(int* v) {
  if (v == nullptr) return fail(cudaErrorInvalidValue);
  *v = 13000;
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v == nullptr) return fail(cudaErrorInvalidValue);
  *v = CUDART_VERSION;
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaDeviceSynchronize(void) {
  if (cudaError_t e = check_device()) return fail(e);
  if (cudaError_t e = Streams::get().unsafe_call()) return fail(e);
  Streams::get().synchronize_device(current_physical());
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaDeviceReset(void) {
  if (cudaError_t e = check_device()) return fail(e);
  Streams::get().synchronize_device(current_physical());
  Devices::get().free_all(current_physical());
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error();
  last_error() = cudaSuccess;
  return e;
}

SIMGPU_API cudaError_t cudaPeekAtLastError(void) { return last_error(); }

#define SIMGPU_ERRORS(X)                                                          \
  X(cudaSuccess, "no error")                                                      \
  X(cudaErrorInvalidValue, "invalid argument")                                    \
  X(cudaErrorMemoryAllocation, "out of memory")                                   \
  X(cudaErrorInitializationError, "initialization error")                         \
  X(cudaErrorInvalidDevice, "invalid device ordinal")                             \
  X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")         \
  X(cudaErrorNoDevice, "no CUDA-capable device is detected")                      \
  X(cudaErrorInvalidResourceHandle, "invalid resource handle")                    \
  X(cudaErrorNotReady, "device not ready")                                        \
  X(cudaErrorIllegalState, "the operation cannot be performed in the present state") \
  X(cudaErrorHostMemoryAlreadyRegistered, "part or all of the requested memory range is already mapped") \
  X(cudaErrorHostMemoryNotRegistered, "pointer does not correspond to a registered memory region") \
  X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing") \
  X(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture") \
  X(cudaErrorStreamCaptureWrongThread, "attempt to terminate a thread-local capture sequence from another thread") \
  X(cudaErrorIllegalAddress, "an illegal memory access was encountered")         \
  X(cudaErrorCapturedEvent, "operation not permitted on an event last recorded in a capturing stream") \
  X(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version")

SIMGPU_API const char* cudaGetErrorString(cudaError_t e) {
#define X(code, text) \
  case code: return text;
  switch (e) { SIMGPU_ERRORS(X) default: return "unrecognized error code"; }
#undef X
}

SIMGPU_API const char* cudaGetErrorName(cudaError_t e) {
#define X(code, text) \
  case code: return #code;
  switch (e) { SIMGPU_ERRORS(X) default: return "cudaErrorUnknown"; }
#undef X
}

// ---- memory ---------------------------------------------------------------------------------------------
SIMGPU_API cudaError_t cudaMalloc(void** devPtr, size_t size) {
  if (devPtr == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = check_device()) return fail(e);
  if (cudaError_t e = Streams::get().unsafe_call()) return fail(e);
  const long long n = ++g_mallocs;
  const long long limit = env_int("SIMGPU_FAIL_MALLOC_AFTER", -1);
  if (limit >= 0 && n > limit && simgpu_fault_applies()) {
    SIMGPU_LOG("cudart: cudaMalloc #%lld fails (SIMGPU_FAIL_MALLOC_AFTER=%lld)", n, limit);
    *devPtr = nullptr;
    return fail(cudaErrorMemoryAllocation);
  }
  if (size == 0) {
    *devPtr = nullptr;
    return cudaSuccess;
  }
  cudaError_t e = Devices::get().malloc_device(current_physical(), size, devPtr);
  if (e != cudaSuccess) {
    *devPtr = nullptr;
    SIMGPU_LOG("cudart: cudaMalloc(%zu) out of memory", size);
  }
  return fail(e);
}

SIMGPU_API cudaError_t cudaFree(void* devPtr) {
  if (devPtr == nullptr) return cudaSuccess;
  if (cudaError_t e = Streams::get().unsafe_call()) return fail(e);
  PtrInfo i = Devices::get().classify(devPtr, 0);
  if (i.kind != PtrKind::Device || i.base != devPtr) return fail(cudaErrorInvalidValue);
  Streams::get().synchronize_device(i.physical);  // cudaFree synchronises, as CUDA's does
  return fail(Devices::get().free_device(devPtr));
}

SIMGPU_API cudaError_t cudaMallocHost(void** ptr, size_t size) {
  if (ptr == nullptr) return fail(cudaErrorInvalidValue);
  if (cudaError_t e = Streams::get().unsafe_call()) return fail(e);
  return fail(Devices::get().malloc_host(size, ptr));
}

SIMGPU_API cudaError_t cudaHostAlloc(void** ptr, size_t size, unsigned int /*flags*/) { return cudaMallocHost(ptr, size); }

SIMGPU_API cudaError_t cudaFreeHost(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  if (cudaError_t e = Streams::get().unsafe_call()) return fail(e);
  for (int phys = 0; phys < Devices::get().physical_count(); ++phys) Streams::get().synchronize_device(phys);
  return fail(Devices::get().free_host(ptr));
}

SIMGPU_API cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int /*flags*/) {
  return fail(Devices::get().register_host(ptr, size));
}

SIMGPU_API cudaError_t cudaHostUnregister(void* ptr) { return fail(Devices::get().unregister_host(ptr)); }

SIMGPU_API cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  if (cudaError_t e = check_device()) return fail(e);
  Devices::get().mem_info(current_physical(), free_bytes, total);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attr, const void* ptr) {
  if (attr == nullptr) return fail(cudaErrorInvalidValue);
  std::memset(attr, 0, sizeof(*attr));
  PtrInfo i = Devices::get().classify(ptr, 0);
  switch (i.kind) {
    case PtrKind::Device:
      attr->type = cudaMemoryTypeDevice;
      attr->device = Devices::get().ordinal_of(i.physical);
      attr->devicePointer = const_cast<void*>(ptr);
      break;
    case PtrKind::Pinned:
    case PtrKind::Registered:
      attr->type = cudaMemoryTypeHost;
      attr->device = current_ordinal();
      attr->devicePointer = const_cast<void*>(ptr);
      attr->hostPointer = const_cast<void*>(ptr);
      break;
    case PtrKind::BadDevice:
      return fail(cudaErrorInvalidValue);
    case PtrKind::Pageable:
      attr->type = cudaMemoryTypeUnregistered;
      attr->device = -2;
      attr->hostPointer = const_cast<void*>(ptr);
      break;
  }
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, cudaMemcpyKind kind) {
  if (cudaError_t e = check_device()) return fail(e);
  if (cudaError_t e = Streams::get().unsafe_call()) return fail(e);
  Task t;
  if (cudaError_t e = plan_copy(dst, src, count, kind, &t)) return fail(e);
  Stream* s = stream_or_null(nullptr);
  // From pageable host memory to the device, CUDA returns once the source has been staged for
  // DMA, before the data lands ("may return before the DMA to final destination completes"), and
  // the copy runs on the legacy stream, which non-blocking streams do not wait for. Simulated: the
  // source is taken now, the data lands SIMGPU_PAGEABLE_COPY_DELAY_US later on the legacy stream.
  Devices& d = Devices::get();
  if (count > 0 && d.classify(dst, count).kind == PtrKind::Device && d.classify(src, count).kind == PtrKind::Pageable) {
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + count);
    char* view = d.classify(dst, count).view;
    const long long delay_us = env_int("SIMGPU_PAGEABLE_COPY_DELAY_US", 20000);
    Streams::get().enqueue(s, [staged, view, delay_us] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      std::memcpy(view, staged->data(), staged->size());
    });
    return cudaSuccess;
  }
  Streams::get().enqueue(s, std::move(t));
  Streams::get().synchronize(s);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, cudaMemcpyKind kind,
                                       cudaStream_t stream) {
  if (cudaError_t e = check_device()) return fail(e);
  Stream* s = stream_or_null(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  Task t;
  if (cudaError_t e = plan_copy(dst, src, count, kind, &t)) return fail(e);
  Streams::get().enqueue(s, std::move(t));
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  if (cudaError_t e = check_device()) return fail(e);
  if (cudaError_t e = Streams::get().unsafe_call()) return fail(e);
  Task t;
  if (cudaError_t e = plan_memset(devPtr, value, count, &t)) return fail(e);
  Stream* s = stream_or_null(nullptr);
  Streams::get().enqueue(s, std::move(t));
  Streams::get().synchronize(s);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  if (cudaError_t e = check_device()) return fail(e);
  Stream* s = stream_or_null(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  Task t;
  if (cudaError_t e = plan_memset(devPtr, value, count, &t)) return fail(e);
  Streams::get().enqueue(s, std::move(t));
  return cudaSuccess;
}
