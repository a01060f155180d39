// GPU compute for the data-parallel workload (docs/workloads.md, "Compute"): cuBLAS SGEMMs on a
// compute stream of the rank's GPU. A layer's compute is its FLOPs at the rate measured at start,
// enqueued as n×n×n products plus one n×n×k remainder; before a collective is posted an event
// recorded on the compute stream orders it after the layers enqueued so far (the backend's
// stream waits on it on the device, or the host waits for backends without a stream).
#pragma once

#include <cstdint>

#include "device/cublas.h"
#include "device/gpu_device.h"
#include "workload/step_compute.h"

namespace commbench::workload {

class GpuCompute final : public StepCompute {
 public:
  static constexpr int kN = 2048;  // 16 MiB per f32 matrix: long enough per launch on any GPU
  // `comm_stream`: the stream the backend's ops run on (stream-ordered backends), else null.
  // Measures the SGEMM rate with events over about `calibration_s` seconds.
  GpuCompute(const GpuDevice& gpu, const cuda::Blas& blas, cuda::Stream comm_stream, double calibration_s = 0.1);
  ~GpuCompute() override;
  GpuCompute(const GpuCompute&) = delete;
  GpuCompute& operator=(const GpuCompute&) = delete;

  double flops_per_s() const override { return rate_; }
  // Enqueues seconds × the measured rate of FLOPs; returns at once (the GPU runs them).
  void run(double seconds, const std::function<void()>& progress) override;
  void order_before_post(const std::function<void()>& progress) override;
  void finish() override;
  std::string engine() const override { return "cublas"; }
  std::string describe() const override;

 private:
  void gemm(int k);  // C = A(n×k)·B(k×n) on the compute stream
  // The constructor's work: buffers, stream, events, handle, then the rate (t0/t1: its timing events).
  void setup(double calibration_s, cuda::Event& t0, cuda::Event& t1);
  void release() noexcept;  // frees whatever exists (the destructor's, and a failed constructor's)
  const GpuDevice& gpu_;
  const cuda::Runtime& rt_;
  const cuda::Blas& blas_;
  cuda::Stream comm_stream_;
  cuda::Stream stream_ = nullptr;
  cuda::BlasHandle handle_ = nullptr;
  cuda::Event ready_ = nullptr;  // "compute enqueued so far is done", recorded before each post
  float* a_ = nullptr;
  float* b_ = nullptr;
  float* c_ = nullptr;
  double rate_ = 0;
};

}  // namespace commbench::workload
