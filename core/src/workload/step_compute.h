// The compute of a step (docs/workloads.md, "Compute"): something that really runs for a given
// time, between which the step runner lets the backend progress. CPU: an SGEMM-like FMA loop on a
// per-rank buffer, calibrated at start (cpu_compute.cpp); GPU: cuBLAS GEMMs on a compute stream
// (gpu_compute.cpp), the backend's stream waiting on an event recorded before each post.
#pragma once

#include <functional>
#include <string>

namespace commbench::workload {

class StepCompute {
 public:
  virtual ~StepCompute() = default;
  // The device's measured rate in FLOP/s (calibrated when the object was made).
  virtual double flops_per_s() const = 0;
  // Runs (or enqueues) `seconds` of compute; `progress` is called between pieces of work so that
  // host backends that need test() calls advance their requests meanwhile.
  virtual void run(double seconds, const std::function<void()>& progress) = 0;
  // A step starts: the run() calls until the next begin_step() are one step's compute.
  virtual void begin_step() {}
  // Before a collective is posted: make it follow the compute enqueued so far (GPU: an event on
  // the compute stream the backend's stream waits on; a host backend waits for it, calling
  // `progress` meanwhile). Nothing on the CPU: run() has returned.
  virtual void order_before_post(const std::function<void()>& progress) { (void)progress; }
  // Waits for all compute enqueued (GPU); nothing on the CPU.
  virtual void finish() {}
  // What ran the compute, for the record's compute_engine: "cpu" or "cublas".
  virtual std::string engine() const = 0;
  virtual std::string describe() const = 0;
};

}  // namespace commbench::workload
