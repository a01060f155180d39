#include "device/cublas.h"

#include <memory>

#include <fmt/format.h>

#include "device/runtime_library.h"
#include "plugin/plugin_error.h"

namespace commbench::cuda {
namespace {

constexpr const char* kDefaultBlasLibrary = "libcublas.so.13";

}  // namespace

struct LoadedBlas {
  Blas* blas = nullptr;
  std::string why;
};

// Loads and binds once per process (a function-local static: thread-safe initialisation).
LoadedBlas Blas::load() {
  LoadedBlas out;
  // Linked against libcudart.so.13 by soname, so it shares the core's runtime (one context).
  const OpenedLibrary opened = open_runtime_library("COMMBENCH_CUBLAS", kDefaultBlasLibrary);
  if (!opened.handle) {
    out.why = fmt::format("cuBLAS {} could not be loaded ({}); install CUDA 13's cuBLAS or set COMMBENCH_CUBLAS to "
                          "its path (the GPU workload computes with cuBLAS)",
                          opened.path, opened.error);
    return out;
  }
  auto b = std::unique_ptr<Blas>(new Blas());
  b->path_ = opened.path;
  std::string missing;
  bind_symbol(opened.handle, "cublasCreate_v2", b->Create, &missing);
  bind_symbol(opened.handle, "cublasDestroy_v2", b->Destroy, &missing);
  bind_symbol(opened.handle, "cublasSetStream_v2", b->SetStream, &missing);
  bind_symbol(opened.handle, "cublasSgemm_v2", b->Sgemm, &missing);
  bind_symbol(opened.handle, "cublasGetStatusString", b->GetStatusString, nullptr);
  if (missing.empty()) out.blas = b.release();  // lives for the process, like the library
  else out.why = fmt::format("cuBLAS {} lacks {} (commbench needs CUDA 13's cuBLAS)", opened.path, missing);
  return out;
}

const Blas* Blas::get(std::string* why) {
  static const LoadedBlas loaded = load();
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
