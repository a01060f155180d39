#include "device/cublas.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include <fmt/format.h>

#include "plugin/plugin_error.h"

namespace commbench::cuda {
namespace {

constexpr const char* kDefaultBlasLibrary = "libcublas.so.13";

struct LoadedBlas {
  Blas* blas = nullptr;
  std::string why;
};

template <class F>
void bind_blas(void* lib, const char* name, F& fn, std::string* missing) {
  fn = reinterpret_cast<F>(::dlsym(lib, name));
  if (!fn && missing) *missing += missing->empty() ? name : fmt::format(", {}", name);
}

}  // namespace

const Blas* Blas::get(std::string* why) {
  static LoadedBlas loaded;
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("COMMBENCH_CUBLAS");
    const std::string path = env && *env ? env : kDefaultBlasLibrary;
    // Linked against libcudart.so.13 by soname, so it shares the core's runtime (one context).
    void* lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* err = ::dlerror();
      loaded.why = fmt::format("cuBLAS {} could not be loaded ({}); install CUDA 13's cuBLAS or set COMMBENCH_CUBLAS "
                               "to its path (the GPU workload computes with cuBLAS)",
                               path, err ? err : "unknown error");
      return;
    }
    auto* b = new Blas();  // lives for the process, like the library
    b->path_ = path;
    std::string missing;
    bind_blas(lib, "cublasCreate_v2", b->Create, &missing);
    bind_blas(lib, "cublasDestroy_v2", b->Destroy, &missing);
    bind_blas(lib, "cublasSetStream_v2", b->SetStream, &missing);
    bind_blas(lib, "cublasSgemm_v2", b->Sgemm, &missing);
    bind_blas(lib, "cublasGetStatusString", b->GetStatusString, nullptr);
    if (!missing.empty()) {
      loaded.why = fmt::format("cuBLAS {} lacks {} (commbench needs CUDA 13's cuBLAS)", path, missing);
      delete b;
      return;
    }
    loaded.blas = b;
  });
  if (why) *why = loaded.why;
  return loaded.blas;
}

void Blas::check(BlasStatus s, const char* what) const {
  if (s == kBlasSuccess) return;
  const char* text = GetStatusString ? GetStatusString(s) : nullptr;
  throw PluginError(s == kBlasAllocFailed ? CB_ERR_RESOURCE_EXHAUSTED : CB_ERR_INTERNAL, kBlasErrorSource, what,
                    text ? fmt::format("{} (cublasStatus {})", text, s) : fmt::format("cublasStatus {}", s));
}

}  // namespace commbench::cuda
