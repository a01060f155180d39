#include "workload/gpu_compute.h"

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace commbench::workload {
namespace {

constexpr unsigned kEventDisableTiming = 0x02;  // cudaEventDisableTiming (driver_types.h)
constexpr double kGemmFlops = 2.0 * GpuCompute::kN * GpuCompute::kN * GpuCompute::kN;

}  // namespace

GpuCompute::GpuCompute(const GpuDevice& gpu, const cuda::Blas& blas, cuda::Stream comm_stream, double calibration_s)
    : gpu_(gpu), rt_(gpu.rt()), blas_(blas), comm_stream_(comm_stream) {
  // A failure part way (out of device memory, cublasCreate) must not leak what was made before it:
  // the destructor does not run for a constructor that throws.
  cuda::Event t0 = nullptr, t1 = nullptr;
  try {
    setup(calibration_s, t0, t1);
  } catch (...) {
    if (t0) rt_.EventDestroy(t0);
    if (t1) rt_.EventDestroy(t1);
    release();
    throw;
  }
  rt_.EventDestroy(t0);
  rt_.EventDestroy(t1);
  if (!(rate_ > 0)) rate_ = kGemmFlops / 1e-3;  // a timer that never advanced: say 1 GEMM per ms
}

void GpuCompute::setup(double calibration_s, cuda::Event& t0, cuda::Event& t1) {
  const size_t bytes = sizeof(float) * kN * kN;
  a_ = static_cast<float*>(gpu_.alloc_device(bytes));
  b_ = static_cast<float*>(gpu_.alloc_device(bytes));
  c_ = static_cast<float*>(gpu_.alloc_device(bytes));
  // Defined inputs (C = A·B with beta 0 stays bounded: every element is 0.5).
  gpu_.copy_to_device_on_stream(a_, std::vector<float>(kN * kN, 1.0f / kN).data(), bytes);  // waits: done before any GEMM
  gpu_.copy_to_device_on_stream(b_, std::vector<float>(kN * kN, 0.5f).data(), bytes);
  rt_.check(rt_.StreamCreateWithFlags(&stream_, cuda::kStreamNonBlocking), "cudaStreamCreateWithFlags (compute)");
  rt_.check(rt_.EventCreateWithFlags(&ready_, kEventDisableTiming), "cudaEventCreateWithFlags (compute)");
  blas_.check(blas_.Create(&handle_), "cublasCreate");
  blas_.check(blas_.SetStream(handle_, stream_), "cublasSetStream");

  // Rate: doubling batches of full GEMMs between two events until one batch lasts long enough.
  rt_.check(rt_.EventCreateWithFlags(&t0, cuda::kEventDefault), "cudaEventCreateWithFlags");
  rt_.check(rt_.EventCreateWithFlags(&t1, cuda::kEventDefault), "cudaEventCreateWithFlags");
  gemm(kN);  // warm-up: cuBLAS loads its kernels on first use
  for (int reps = 1;; reps *= 2) {
    rt_.check(rt_.EventRecord(t0, stream_), "cudaEventRecord");
    for (int i = 0; i < reps; ++i) gemm(kN);
    rt_.check(rt_.EventRecord(t1, stream_), "cudaEventRecord");
    rt_.check(rt_.EventSynchronize(t1), "cudaEventSynchronize");
    float ms = 0;
    rt_.check(rt_.EventElapsedTime(&ms, t0, t1), "cudaEventElapsedTime");
    if (ms > 0) rate_ = reps * kGemmFlops / (ms / 1e3);
    if ((ms > 0 && ms / 1e3 >= calibration_s / 2) || reps >= 4096) break;
  }
}

GpuCompute::~GpuCompute() { release(); }

void GpuCompute::release() noexcept {
  if (stream_) rt_.StreamSynchronize(stream_);
  if (handle_) blas_.Destroy(handle_);
  if (ready_) rt_.EventDestroy(ready_);
  if (stream_) rt_.StreamDestroy(stream_);
  for (float* p : {a_, b_, c_})
    if (p) gpu_.free_device(p);
}

void GpuCompute::gemm(int k) {
  const float alpha = 1.0f, beta = 0.0f;
  blas_.check(blas_.Sgemm(handle_, cuda::kBlasOpN, cuda::kBlasOpN, kN, kN, k, &alpha, a_, kN, b_, kN, &beta, c_, kN),
              "cublasSgemm");
}

void GpuCompute::run(double seconds, const std::function<void()>&) {
  if (!(seconds > 0)) return;
  // The layer's FLOPs at the measured rate: whole n³ products, then one with a shorter inner
  // dimension for the rest (at least k = 1, so that every layer enqueues some work).
  const double flops = seconds * rate_;
  const auto full = static_cast<long>(std::floor(flops / kGemmFlops));
  for (long i = 0; i < full; ++i) gemm(kN);
  const double rest = flops - static_cast<double>(full) * kGemmFlops;
  const long k = std::lround(rest / (2.0 * kN * kN));
  if (k > 0 || full == 0) gemm(static_cast<int>(std::max(1L, k)));
}

void GpuCompute::order_before_post(const std::function<void()>& progress) {
  rt_.check(rt_.EventRecord(ready_, stream_), "cudaEventRecord (compute done)");
  if (comm_stream_) {  // ordered on the device: the host goes on at once
    rt_.check(rt_.StreamWaitEvent(comm_stream_, ready_, 0), "cudaStreamWaitEvent");
    return;
  }
  // The host backend reads the buffers itself: wait for the GPU here, letting the requests
  // already posted progress meanwhile (CB_CAP_NEEDS_PROGRESS backends advance only in test()).
  for (;;) {
    const cuda::Error e = rt_.EventQuery(ready_);
    if (e == cuda::kSuccess) return;
    if (e != cuda::kErrorNotReady) rt_.check(e, "cudaEventQuery (compute done)");
    if (progress) progress();
    else std::this_thread::yield();
  }
}

void GpuCompute::finish() { rt_.check(rt_.StreamSynchronize(stream_), "cudaStreamSynchronize (compute)"); }

std::string GpuCompute::describe() const {
  return fmt::format("cuBLAS SGEMM {}x{}x{} on GPU {} ({}), {:.2f} TFLOP/s measured", kN, kN, kN, gpu_.index(),
                     blas_.path(), rate_ / 1e12);
}

}  // namespace commbench::workload
