#include "device/cuda_runtime.h"

#include <mutex>

#include <fmt/format.h>

#include "device/runtime_library.h"
#include "plugin/plugin_error.h"

namespace commbench::cuda {
namespace {

constexpr const char* kDefaultLibrary = "libcudart.so.13";

struct Loaded {
  Runtime* runtime = nullptr;
  std::string why;
};

}  // namespace

const Runtime* Runtime::get(std::string* why) {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    // Plugins linked against libcudart get the same loaded object through the soname, so core
    // and plugin share one runtime (one context, one stream space).
    const OpenedLibrary opened = open_runtime_library("COMMBENCH_CUDART", kDefaultLibrary);
    const std::string& path = opened.path;
    void* lib = opened.handle;
    if (!lib) {
      loaded.why = fmt::format("the CUDA runtime {} could not be loaded ({}){}", path, opened.error,
                               opened.from_env ? "" : "; install CUDA 13 or set COMMBENCH_CUDART to its path");
      return;
    }
    auto* r = new Runtime();  // lives for the process, like the library
    r->path_ = path;
    std::string missing;
    bind_symbol(lib, "cudaGetDeviceCount", r->GetDeviceCount, &missing);
    bind_symbol(lib, "cudaSetDevice", r->SetDevice, &missing);
    bind_symbol(lib, "cudaGetDevice", r->GetDevice, &missing);
    bind_symbol(lib, "cudaGetDeviceProperties", r->GetDeviceProperties, &missing);
    bind_symbol(lib, "cudaDeviceGetAttribute", r->DeviceGetAttribute, &missing);
    bind_symbol(lib, "cudaDeviceGetPCIBusId", r->DeviceGetPCIBusId, &missing);
    bind_symbol(lib, "cudaDriverGetVersion", r->DriverGetVersion, &missing);
    bind_symbol(lib, "cudaRuntimeGetVersion", r->RuntimeGetVersion, &missing);
    bind_symbol(lib, "cudaDeviceSynchronize", r->DeviceSynchronize, &missing);
    bind_symbol(lib, "cudaGetLastError", r->GetLastError, &missing);
    bind_symbol(lib, "cudaGetErrorString", r->GetErrorString, &missing);
    bind_symbol(lib, "cudaGetErrorName", r->GetErrorName, &missing);
    bind_symbol(lib, "cudaMalloc", r->Malloc, &missing);
    bind_symbol(lib, "cudaFree", r->Free, &missing);
    bind_symbol(lib, "cudaHostAlloc", r->HostAlloc, &missing);
    bind_symbol(lib, "cudaFreeHost", r->FreeHost, &missing);
    bind_symbol(lib, "cudaMemGetInfo", r->MemGetInfo, &missing);
    bind_symbol(lib, "cudaMemcpy", r->Memcpy, &missing);
    bind_symbol(lib, "cudaMemcpyAsync", r->MemcpyAsync, &missing);
    bind_symbol(lib, "cudaStreamCreateWithFlags", r->StreamCreateWithFlags, &missing);
    bind_symbol(lib, "cudaStreamDestroy", r->StreamDestroy, &missing);
    bind_symbol(lib, "cudaStreamSynchronize", r->StreamSynchronize, &missing);
    bind_symbol(lib, "cudaStreamQuery", r->StreamQuery, &missing);
    bind_symbol(lib, "cudaEventCreateWithFlags", r->EventCreateWithFlags, &missing);
    bind_symbol(lib, "cudaEventRecord", r->EventRecord, &missing);
    bind_symbol(lib, "cudaEventRecordWithFlags", r->EventRecordWithFlags, &missing);
    bind_symbol(lib, "cudaEventSynchronize", r->EventSynchronize, &missing);
    bind_symbol(lib, "cudaEventQuery", r->EventQuery, &missing);
    bind_symbol(lib, "cudaEventElapsedTime", r->EventElapsedTime, &missing);
    bind_symbol(lib, "cudaEventDestroy", r->EventDestroy, &missing);
    bind_symbol(lib, "cudaStreamWaitEvent", r->StreamWaitEvent, &missing);
    bind_symbol(lib, "cudaStreamBeginCapture", r->StreamBeginCapture, &missing);
    bind_symbol(lib, "cudaStreamEndCapture", r->StreamEndCapture, &missing);
    bind_symbol(lib, "cudaGraphInstantiate", r->GraphInstantiate, &missing);
    bind_symbol(lib, "cudaGraphLaunch", r->GraphLaunch, &missing);
    bind_symbol(lib, "cudaGraphExecDestroy", r->GraphExecDestroy, &missing);
    bind_symbol(lib, "cudaGraphDestroy", r->GraphDestroy, &missing);
    if (!missing.empty()) {
      loaded.why = fmt::format("the CUDA runtime {} lacks {} (commbench needs CUDA 13)", path, missing);
      delete r;
      return;
    }
    loaded.runtime = r;
  });
  if (why) *why = loaded.why;
  return loaded.runtime;
}

std::string Runtime::describe(Error e) const {
  const char* name = GetErrorName ? GetErrorName(e) : nullptr;
  const char* text = GetErrorString ? GetErrorString(e) : nullptr;
  return fmt::format("{} ({})", name ? name : fmt::format("cudaError {}", e), text ? text : "no description");
}

void Runtime::check(Error e, const char* what) const {
  if (e == kSuccess) return;
  throw PluginError(e == kErrorMemoryAllocation ? CB_ERR_RESOURCE_EXHAUSTED : CB_ERR_INTERNAL,
                    kErrorSource, what, describe(e));
}

}  // namespace commbench::cuda
