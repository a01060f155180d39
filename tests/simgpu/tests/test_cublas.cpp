// Simulated cuBLAS (README "cuBLAS"): SGEMM really computes (small sizes), runs on its stream in order
// and asynchronously for 2mnk / SIMGPU_GEMM_FLOPS seconds, and refuses what cuBLAS refuses.
#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

struct DeviceFloats {
  float* p = nullptr;
  explicit DeviceFloats(size_t n) { EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float)), cudaSuccess); }
  ~DeviceFloats() { cudaFree(p); }
};

struct Handle {
  cublasHandle_t h = nullptr;
  Handle() { EXPECT_EQ(cublasCreate_v2(&h), CUBLAS_STATUS_SUCCESS); }
  ~Handle() { cublasDestroy_v2(h); }
};

TEST(SimCublas, SgemmComputesWithTransposesAlphaAndBetaInStreamOrder) {
  // C (2x3) = 2 * A^T (A stored 2x2... as k x m = 2x2) * B (2x3) + 1 * C, column-major.
  const int m = 2, n = 3, k = 2;
  const std::vector<float> a = {1, 2, 3, 4};        // A stored k x m (lda 2): A^T = [[1,2],[3,4]]
  const std::vector<float> b = {1, 0, 0, 1, 1, 1};  // k x n: columns (1,0), (0,1), (1,1)
  const std::vector<float> c = {1, 1, 1, 1, 1, 1};
  DeviceFloats da(4), db(6), dc(6);
  ASSERT_EQ(cudaMemcpy(da.p, a.data(), 16, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(db.p, b.data(), 24, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dc.p, c.data(), 24, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // pageable uploads land late (legacy stream)
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Handle h;
  ASSERT_EQ(cublasSetStream_v2(h.h, s), CUBLAS_STATUS_SUCCESS);
  const float alpha = 2, beta = 1;
  ASSERT_EQ(cublasSgemm_v2(h.h, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, da.p, 2, db.p, 2, &beta, dc.p, 2),
            CUBLAS_STATUS_SUCCESS);
  std::vector<float> out(6, -1);
  ASSERT_EQ(cudaMemcpyAsync(out.data(), dc.p, 24, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  // A^T * B: columns (1,3), (2,4), (3,7); times 2 plus 1.
  EXPECT_EQ(out, (std::vector<float>{3, 7, 5, 9, 7, 15}));
  cudaStreamDestroy(s);
}

TEST(SimCublas, LargeSgemmLastsItsFlopsAtTheSimulatedRateAndIsNotComputed) {
  const int n = 4096;  // 2n^3 = 137.4 GFLOP: 137 ms at the default 1e12 FLOP/s; above the compute limit
  DeviceFloats a(size_t{1} * n * n), b(size_t{1} * n * n), c(size_t{1} * n * n);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t t0, t1;
  ASSERT_EQ(cudaEventCreate(&t0), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&t1), cudaSuccess);
  Handle h;
  ASSERT_EQ(cublasSetStream_v2(h.h, s), CUBLAS_STATUS_SUCCESS);
  const float alpha = 1, beta = 0;
  ASSERT_EQ(cudaEventRecord(t0, s), cudaSuccess);
  ASSERT_EQ(cublasSgemm_v2(h.h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.p, n, b.p, n, &beta, c.p, n),
            CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaEventRecord(t1, s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady) << "the GEMM must run asynchronously";
  ASSERT_EQ(cudaEventSynchronize(t1), cudaSuccess);
  float ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&ms, t0, t1), cudaSuccess);
  EXPECT_GE(ms, 2.0 * n * n * n / 1e12 * 1e3 * 0.99);
  float corner = 0;
  ASSERT_EQ(cudaMemcpy(&corner, c.p + (size_t{1} * n * n - 1), 4, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_TRUE(std::isnan(corner)) << "a GEMM the simulation does not compute must not leave a plausible value";
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaStreamDestroy(s);
}

TEST(SimCublas, RefusesWhatCublasRefuses) {
  DeviceFloats a(16), b(16), c(16);
  std::vector<float> host(16);
  const float one = 1;
  EXPECT_EQ(cublasSgemm_v2(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a.p, 4, b.p, 4, &one, c.p, 4),
            CUBLAS_STATUS_NOT_INITIALIZED);
  cublasHandle_t dead = nullptr;
  ASSERT_EQ(cublasCreate_v2(&dead), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cublasDestroy_v2(dead), CUBLAS_STATUS_SUCCESS);
  EXPECT_EQ(cublasSgemm_v2(dead, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a.p, 4, b.p, 4, &one, c.p, 4),
            CUBLAS_STATUS_NOT_INITIALIZED);
  EXPECT_EQ(cublasDestroy_v2(dead), CUBLAS_STATUS_NOT_INITIALIZED);
  Handle h;
  EXPECT_EQ(cublasSgemm_v2(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, nullptr, 4, b.p, 4, &one, c.p, 4),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm_v2(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, nullptr, a.p, 4, b.p, 4, &one, c.p, 4),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasSgemm_v2(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, host.data(), 4, b.p, 4, &one, c.p, 4),
            CUBLAS_STATUS_INVALID_VALUE) << "host memory as A";
  EXPECT_EQ(cublasSgemm_v2(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a.p, 3, b.p, 4, &one, c.p, 4),
            CUBLAS_STATUS_INVALID_VALUE) << "lda < m";
  EXPECT_EQ(cublasSgemm_v2(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, a.p, 8, b.p, 8, &one, c.p, 8),
            CUBLAS_STATUS_INVALID_VALUE) << "matrices beyond their allocations";
  EXPECT_EQ(cublasSgemm_v2(h.h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 4, 4, &one, a.p, 4, b.p, 4, &one, c.p, 4),
            CUBLAS_STATUS_INVALID_VALUE);
  // A stream of another GPU, a destroyed stream.
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  if (count > 1) {
    ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
    cudaStream_t other;
    ASSERT_EQ(cudaStreamCreate(&other), cudaSuccess);
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    EXPECT_EQ(cublasSetStream_v2(h.h, other), CUBLAS_STATUS_INVALID_VALUE);
    cudaStreamDestroy(other);
  }
  cudaStream_t gone;
  ASSERT_EQ(cudaStreamCreate(&gone), cudaSuccess);
  ASSERT_EQ(cublasSetStream_v2(h.h, gone), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(cudaStreamDestroy(gone), cudaSuccess);
  EXPECT_EQ(cublasSgemm_v2(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a.p, 4, b.p, 4, &one, c.p, 4),
            CUBLAS_STATUS_INVALID_VALUE);
}

}  // namespace
