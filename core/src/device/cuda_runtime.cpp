#include "device/cuda_runtime.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "plugin/plugin_error.h"

namespace commbench::cuda {
namespace {

constexpr const char* kDefaultLibrary = "libcudart.so.13";

struct Loaded {
  Runtime* runtime = nullptr;
  std::string why;
};

template <class F>
bool bind(void* lib, const char* name, F& fn, std::string& missing) {
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  if (!fn) missing += missing.empty() ? name : fmt::format(", {}", name);
  return fn != nullptr;
}

}  // namespace

const Runtime* Runtime::get(std::string* why) {
  static Loaded loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("COMMBENCH_CUDART");
    const std::string path = env && *env ? env : kDefaultLibrary;
    // RTLD_GLOBAL is not needed: plugins linked against libcudart get the same loaded object
    // through the soname, so core and plugin share one runtime (one context, one stream space).
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* err = ::dlerror();
      loaded.why = fmt::format("the CUDA runtime {} could not be loaded ({}){}", path,
                               err ? err : "unknown error",
                               env ? "" : "; install CUDA 13 or set COMMBENCH_CUDART to its path");
      return;
    }
    auto* r = new Runtime();  // lives for the process, like the library
    r->path_ = path;
    std::string missing;
    bind(lib, "cudaGetDeviceCount", r->GetDeviceCount, missing);
    bind(lib, "cudaSetDevice", r->SetDevice, missing);
    bind(lib, "cudaGetDevice", r->GetDevice, missing);
    bind(lib, "cudaGetDeviceProperties", r->GetDeviceProperties, missing);
    bind(lib, "cudaDeviceGetAttribute", r->DeviceGetAttribute, missing);
    bind(lib, "cudaDeviceGetPCIBusId", r->DeviceGetPCIBusId, missing);
    bind(lib, "cudaDriverGetVersion", r->DriverGetVersion, missing);
    bind(lib, "cudaRuntimeGetVersion", r->RuntimeGetVersion, missing);
    bind(lib, "cudaDeviceSynchronize", r->DeviceSynchronize, missing);
    bind(lib, "cudaGetLastError", r->GetLastError, missing);
    bind(lib, "cudaGetErrorString", r->GetErrorString, missing);
    bind(lib, "cudaGetErrorName", r->GetErrorName, missing);
    bind(lib, "cudaMalloc", r->Malloc, missing);
    bind(lib, "cudaFree", r->Free, missing);
    bind(lib, "cudaHostAlloc", r->HostAlloc, missing);
    bind(lib, "cudaFreeHost", r->FreeHost, missing);
    bind(lib, "cudaMemGetInfo", r->MemGetInfo, missing);
    bind(lib, "cudaMemcpy", r->Memcpy, missing);
    bind(lib, "cudaMemcpyAsync", r->MemcpyAsync, missing);
    bind(lib, "cudaStreamCreateWithFlags", r->StreamCreateWithFlags, missing);
    bind(lib, "cudaStreamDestroy", r->StreamDestroy, missing);
    bind(lib, "cudaStreamSynchronize", r->StreamSynchronize, missing);
    bind(lib, "cudaStreamQuery", r->StreamQuery, missing);
    bind(lib, "cudaEventCreateWithFlags", r->EventCreateWithFlags, missing);
    bind(lib, "cudaEventRecord", r->EventRecord, missing);
    bind(lib, "cudaEventSynchronize", r->EventSynchronize, missing);
    bind(lib, "cudaEventQuery", r->EventQuery, missing);
    bind(lib, "cudaEventElapsedTime", r->EventElapsedTime, missing);
    bind(lib, "cudaEventDestroy", r->EventDestroy, missing);
    bind(lib, "cudaStreamWaitEvent", r->StreamWaitEvent, missing);
    bind(lib, "cudaStreamBeginCapture", r->StreamBeginCapture, missing);
    bind(lib, "cudaStreamEndCapture", r->StreamEndCapture, missing);
    bind(lib, "cudaGraphInstantiate", r->GraphInstantiate, missing);
    bind(lib, "cudaGraphLaunch", r->GraphLaunch, missing);
    bind(lib, "cudaGraphExecDestroy", r->GraphExecDestroy, missing);
    bind(lib, "cudaGraphDestroy", r->GraphDestroy, missing);
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
