// cuBLAS, loaded with dlopen in the worker when a data-parallel workload computes on the GPU
// (docs/workloads.md, "Compute"). Like device/cuda_runtime.h: no CUDA header, the few prototypes
// and constants the core uses copied from CUDA 13's cublas_api.h (stable ABI: the _v2 symbols
// the cublas_v2.h macros name). COMMBENCH_CUBLAS names the library to load instead of
// "libcublas.so.13".
#pragma once

#include <string>

#include "device/cuda_runtime.h"

namespace commbench::cuda {

using BlasStatus = int;      // cublasStatus_t
using BlasHandle = void*;    // cublasHandle_t
inline constexpr BlasStatus kBlasSuccess = 0;
inline constexpr BlasStatus kBlasAllocFailed = 3;
inline constexpr int kBlasOpN = 0;  // CUBLAS_OP_N
inline constexpr const char* kBlasErrorSource = "cublas";

struct LoadedBlas;

class Blas {
 public:
  // The process's cuBLAS, loaded on first call; nullptr when it cannot be loaded, then `why`
  // says what was tried, what failed and what to do.
  static const Blas* get(std::string* why = nullptr);

  BlasStatus (*Create)(BlasHandle*) = nullptr;
  BlasStatus (*Destroy)(BlasHandle) = nullptr;
  BlasStatus (*SetStream)(BlasHandle, Stream) = nullptr;
  BlasStatus (*Sgemm)(BlasHandle, int transa, int transb, int m, int n, int k, const float* alpha, const float* a,
                      int lda, const float* b, int ldb, const float* beta, float* c, int ldc) = nullptr;
  const char* (*GetStatusString)(BlasStatus) = nullptr;  // optional (cuBLAS ≥ 11.4)

  const std::string& path() const { return path_; }
  // Throws PluginError (plugin kBlasErrorSource): RESOURCE_EXHAUSTED for ALLOC_FAILED, else INTERNAL.
  void check(BlasStatus s, const char* what) const;

 private:
  Blas() = default;
  static LoadedBlas load();
  std::string path_;
};

}  // namespace commbench::cuda
