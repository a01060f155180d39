// The CUDA runtime, loaded with dlopen in the worker when an execution needs device memory.
// The core has no CUDA header and builds without the toolkit: the few prototypes it calls are
// declared here, with the enum values it needs copied as constants (they are part of CUDA's
// stable ABI; the values below are those of CUDA 13's driver_types.h).
// COMMBENCH_CUDART names the library to load instead of "libcudart.so.13".
#pragma once

#include <cstddef>
#include <string>

namespace commbench::cuda {

using Error = int;          // cudaError_t
using Stream = void*;       // cudaStream_t
using Event = void*;        // cudaEvent_t
using Graph = void*;        // cudaGraph_t
using GraphExec = void*;    // cudaGraphExec_t

// cudaError_t values the core tells apart (driver_types.h).
inline constexpr Error kSuccess = 0;
inline constexpr Error kErrorMemoryAllocation = 2;
inline constexpr Error kErrorInsufficientDriver = 35;
inline constexpr Error kErrorNoDevice = 100;
inline constexpr Error kErrorNotReady = 600;
// cudaMemcpyKind
inline constexpr int kMemcpyHostToDevice = 1;
inline constexpr int kMemcpyDeviceToHost = 2;
inline constexpr Error kErrorCapturedEvent = 907;  // an event last recorded in a capturing stream
// Flags: cudaStreamNonBlocking, cudaEventDefault, cudaHostAllocDefault, cudaEventRecordExternal
// (a record during stream capture that becomes a graph node: recorded at every launch).
inline constexpr unsigned kStreamNonBlocking = 0x01;
inline constexpr unsigned kEventDefault = 0x00;
inline constexpr unsigned kHostAllocDefault = 0x00;
inline constexpr unsigned kEventRecordExternal = 0x01;
// cudaStreamCaptureModeThreadLocal: other threads' unsafe calls do not break our capture.
inline constexpr int kCaptureModeThreadLocal = 1;
// cudaDeviceAttr
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;
// cudaDeviceProp starts with `char name[256]`; the rest of its layout changes between
// releases, so the core reads the name only, from a buffer larger than any release's struct.
inline constexpr size_t kDevicePropNameBytes = 256;
inline constexpr size_t kDevicePropBufferBytes = 8192;

// The `plugin` of the PluginErrors the core's own CUDA calls throw: they travel the same typed
// path as a backend's errors (status decides skip / unsupported / fail).
inline constexpr const char* kErrorSource = "cuda runtime";

class Runtime {
 public:
  // The process's runtime, loaded on first call. nullptr when it cannot be loaded; then
  // `why` (if given) says what was tried and what failed.
  static const Runtime* get(std::string* why = nullptr);

  // Prototypes as in cuda_runtime_api.h (CUDA 13), by symbol name.
  Error (*GetDeviceCount)(int*) = nullptr;
  Error (*SetDevice)(int) = nullptr;
  Error (*GetDevice)(int*) = nullptr;
  Error (*GetDeviceProperties)(void* prop, int device) = nullptr;
  Error (*DeviceGetAttribute)(int* value, int attr, int device) = nullptr;
  Error (*DeviceGetPCIBusId)(char* bus, int len, int device) = nullptr;
  Error (*DriverGetVersion)(int*) = nullptr;
  Error (*RuntimeGetVersion)(int*) = nullptr;
  Error (*DeviceSynchronize)() = nullptr;
  Error (*GetLastError)() = nullptr;
  const char* (*GetErrorString)(Error) = nullptr;
  const char* (*GetErrorName)(Error) = nullptr;
  Error (*Malloc)(void**, size_t) = nullptr;
  Error (*Free)(void*) = nullptr;
  Error (*HostAlloc)(void**, size_t, unsigned) = nullptr;
  Error (*FreeHost)(void*) = nullptr;
  Error (*MemGetInfo)(size_t* free, size_t* total) = nullptr;
  Error (*Memcpy)(void*, const void*, size_t, int kind) = nullptr;
  Error (*MemcpyAsync)(void*, const void*, size_t, int kind, Stream) = nullptr;
  Error (*StreamCreateWithFlags)(Stream*, unsigned) = nullptr;
  Error (*StreamDestroy)(Stream) = nullptr;
  Error (*StreamSynchronize)(Stream) = nullptr;
  Error (*StreamQuery)(Stream) = nullptr;
  Error (*EventCreateWithFlags)(Event*, unsigned) = nullptr;
  Error (*EventRecord)(Event, Stream) = nullptr;
  Error (*EventRecordWithFlags)(Event, Stream, unsigned flags) = nullptr;
  Error (*EventSynchronize)(Event) = nullptr;
  Error (*EventQuery)(Event) = nullptr;
  Error (*EventElapsedTime)(float* ms, Event start, Event end) = nullptr;
  Error (*EventDestroy)(Event) = nullptr;
  Error (*StreamWaitEvent)(Stream, Event, unsigned flags) = nullptr;
  Error (*StreamBeginCapture)(Stream, int mode) = nullptr;
  Error (*StreamEndCapture)(Stream, Graph*) = nullptr;
  Error (*GraphInstantiate)(GraphExec*, Graph, unsigned long long flags) = nullptr;
  Error (*GraphLaunch)(GraphExec, Stream) = nullptr;
  Error (*GraphExecDestroy)(GraphExec) = nullptr;
  Error (*GraphDestroy)(Graph) = nullptr;

  const std::string& path() const { return path_; }
  // "cudaErrorMemoryAllocation (out of memory)".
  std::string describe(Error e) const;
  // Throws PluginError (plugin kErrorSource, operation `what`) when e != kSuccess: status
  // CB_ERR_RESOURCE_EXHAUSTED for cudaErrorMemoryAllocation (the case runner skips that size),
  // CB_ERR_INTERNAL otherwise.
  void check(Error e, const char* what) const;

 private:
  Runtime() = default;
  std::string path_;
};

}  // namespace commbench::cuda
