// Simulated libcublas.so.13: the subset commbench's GPU workload uses (create, destroy, set stream,
// SGEMM, status strings). A GEMM is a stream operation on the simulated stream: it really computes
// C = alpha·op(A)·op(B) + beta·C on the device memory when m·n·k ≤ SIMGPU_GEMM_COMPUTE_LIMIT
// multiply-adds (default 2^24), otherwise it writes NaN into C (the result was not computed, so
// nothing may pass for it); either way it lasts at least 2·m·n·k / SIMGPU_GEMM_FLOPS seconds
// (default 1e12 FLOP/s) from when the stream reaches it, so missing event ordering shows as
// wrong timing or wrong data. Strict like cuBLAS: a null or destroyed handle is
// CUBLAS_STATUS_NOT_INITIALIZED; bad sizes, null pointers, pointers that are not device memory of
// the handle's GPU, or a stream of another GPU are CUBLAS_STATUS_INVALID_VALUE.
#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "../common/knobs.hpp"
#include "../common/simgpu_private.h"

#define SIMGPU_API extern "C" __attribute__((visibility("default")))

struct cublasContext {
  int physical = -1;
  cudaStream_t stream = nullptr;  // 0: the legacy stream, as in cuBLAS
};

namespace {

std::mutex g_mu;
std::set<cublasContext*> g_handles;

bool live(cublasHandle_t h) {
  std::lock_guard<std::mutex> lk(g_mu);
  return h != nullptr && g_handles.count(h) != 0;
}

double gemm_flops_per_s() {
  static const double rate = [] {
    const char* v = simgpu::env("SIMGPU_GEMM_FLOPS");
    const double x = v ? std::strtod(v, nullptr) : 0;
    return x > 0 ? x : 1e12;
  }();
  return rate;
}

long long compute_limit() {
  static const long long limit = simgpu::env_int("SIMGPU_GEMM_COMPUTE_LIMIT", 1LL << 24);
  return limit;
}

// Element (i, j) of op(X) for a column-major X with leading dimension ld.
inline float at(const float* x, int ld, bool trans, int i, int j) {
  return trans ? x[static_cast<size_t>(i) * ld + j] : x[static_cast<size_t>(j) * ld + i];
}

}  // namespace

SIMGPU_API cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int ordinal = -1;
  if (cudaGetDevice(&ordinal) != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  const int physical = simgpu_physical_device(ordinal);
  if (physical < 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto* h = new cublasContext{physical, nullptr};
  std::lock_guard<std::mutex> lk(g_mu);
  g_handles.insert(h);
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

SIMGPU_API cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (handle == nullptr || g_handles.erase(handle) == 0) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

SIMGPU_API cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const int phys = simgpu_stream_physical(stream);
  if (phys < 0) return CUBLAS_STATUS_INVALID_VALUE;  // not a stream (real cuBLAS would fail at launch)
  if (stream != nullptr && phys != handle->physical) return CUBLAS_STATUS_INVALID_VALUE;  // another GPU's stream
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

SIMGPU_API cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* stream) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (stream == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  *stream = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

SIMGPU_API const char* cublasGetStatusString(cublasStatus_t status) {
  static const std::pair<cublasStatus_t, const char*> kText[] = {
      {CUBLAS_STATUS_SUCCESS, "the operation completed successfully"},
      {CUBLAS_STATUS_NOT_INITIALIZED, "the library was not initialized"},
      {CUBLAS_STATUS_ALLOC_FAILED, "the resource allocation failed"},
      {CUBLAS_STATUS_INVALID_VALUE, "an invalid numeric value was used as an argument"},
      {CUBLAS_STATUS_EXECUTION_FAILED, "the GPU program failed to execute"},
      {CUBLAS_STATUS_INTERNAL_ERROR, "an internal operation failed"},
      {CUBLAS_STATUS_NOT_SUPPORTED, "the functionality requested is not supported"}};
  for (const auto& [s, text] : kText)
    if (s == status) return text;
  return "unknown error";
}

SIMGPU_API cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const float* alpha, const float* A, int lda,
                                         const float* B, int ldb, const float* beta, float* C, int ldc) {
  if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const bool ta = transa == CUBLAS_OP_T || transa == CUBLAS_OP_C, tb = transb == CUBLAS_OP_T || transb == CUBLAS_OP_C;
  if ((transa != CUBLAS_OP_N && !ta) || (transb != CUBLAS_OP_N && !tb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  const int a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  if (lda < std::max(1, a_rows) || ldb < std::max(1, b_rows) || ldc < std::max(1, m)) return CUBLAS_STATUS_INVALID_VALUE;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;  // quick return, as cuBLAS
  if (alpha == nullptr || beta == nullptr || C == nullptr || (k > 0 && (A == nullptr || B == nullptr)))
    return CUBLAS_STATUS_INVALID_VALUE;
  // The matrices must be device memory of the handle's GPU (cuBLAS would fault on the device).
  auto span = [](int ld, int cols) { return static_cast<size_t>(ld) * static_cast<size_t>(cols - 1) * sizeof(float); };
  int phys = -1;
  float* c = static_cast<float*>(simgpu_device_view(C, span(ldc, n) + sizeof(float) * m, &phys));
  if (c == nullptr || phys != handle->physical) return CUBLAS_STATUS_INVALID_VALUE;
  const float* a = nullptr;
  const float* b = nullptr;
  if (k > 0) {
    a = static_cast<const float*>(simgpu_device_view(A, span(lda, a_cols) + sizeof(float) * a_rows, &phys));
    if (a == nullptr || phys != handle->physical) return CUBLAS_STATUS_INVALID_VALUE;
    b = static_cast<const float*>(simgpu_device_view(B, span(ldb, b_cols) + sizeof(float) * b_rows, &phys));
    if (b == nullptr || phys != handle->physical) return CUBLAS_STATUS_INVALID_VALUE;
  }
  const int sp = simgpu_stream_physical(handle->stream);
  if (sp < 0) return CUBLAS_STATUS_INVALID_VALUE;  // the stream was destroyed since cublasSetStream
  if (sp != handle->physical) return CUBLAS_STATUS_EXECUTION_FAILED;  // legacy stream of another current device
  // Scalars are read now (host pointer mode, the default); the matrices when the stream runs the op.
  const float al = *alpha, be = *beta;
  const double seconds = 2.0 * m * n * k / gemm_flops_per_s();
  const bool compute = static_cast<long long>(m) * n * k <= compute_limit();
  const std::function<void()> op = [=] {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    if (!compute) {
      // All-ones bytes are a NaN float. One memset per column, not a store per element: under
      // TSan an element loop over the 4M outputs of commbench's GEMMs was 90 % of the GPU
      // workload tests' time; memset is one range access to the sanitizers.
      for (int j = 0; j < n; ++j) std::memset(c + static_cast<size_t>(j) * ldc, 0xFF, sizeof(float) * m);
    } else {
      for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
          float sum = 0;
          for (int p = 0; p < k; ++p) sum += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
          float& out = c[static_cast<size_t>(j) * ldc + i];
          out = be == 0.0f ? al * sum : al * sum + be * out;  // beta 0: C is not read (may hold NaN)
        }
    }
    std::this_thread::sleep_until(end);
  };
  if (simgpu_stream_enqueue(handle->stream, &op) != cudaSuccess) return CUBLAS_STATUS_EXECUTION_FAILED;
  return CUBLAS_STATUS_SUCCESS;
}
