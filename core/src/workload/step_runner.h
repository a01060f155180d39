// Plays a StepPlan (workload/step_schedule.h) on a backend: compute through a StepCompute, the
// collectives through the ABI's post / test / wait, each on its slice of two flat per-rank
// buffers. The same plan runs whole, with its compute only, or with its communication only
// (docs/workloads.md, "What is measured").
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "commbench/backend.h"
#include "plugin/backend_session.h"
#include "workload/step_compute.h"
#include "workload/step_schedule.h"

namespace commbench::workload {

enum class StepMode { Full, ComputeOnly, CommOnly };

struct StepBuffers {
  void* send = nullptr;  // plan.send_elements elements of the dtype
  void* recv = nullptr;  // plan.recv_elements
};

class StepRunner {
 public:
  // `stream`: the backend's stream for stream-ordered backends (cb_op_args.stream), else null.
  // `needs_progress`: CB_CAP_NEEDS_PROGRESS; outstanding requests are then tested while compute runs.
  StepRunner(BackendSession& session, const StepPlan& plan, cb_dtype dtype, size_t elem_size, cb_mem op_memory,
             void* stream, const StepBuffers& buffers, StepCompute& compute, bool needs_progress);
  ~StepRunner();  // releases requests still held (a failed step)
  StepRunner(const StepRunner&) = delete;
  StepRunner& operator=(const StepRunner&) = delete;

  // One step: `compute_s` seconds of compute split by the plan's shares. Returns when every
  // collective completed and (GPU) the compute finished; the caller times it.
  void run(StepMode mode, double compute_s, int32_t timeout_ms);

 private:
  cb_op_args args_of(const CommOp& c) const;
  void progress();

  BackendSession& session_;
  const StepPlan& plan_;
  cb_dtype dtype_;
  size_t elem_size_;
  cb_mem op_memory_;
  void* stream_;
  StepBuffers buf_;
  StepCompute& compute_;
  bool needs_progress_;
  std::vector<cb_request*> requests_;  // per comm, while posted
  std::vector<bool> done_;
};

}  // namespace commbench::workload
