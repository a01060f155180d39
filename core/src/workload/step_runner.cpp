#include "workload/step_runner.h"

#include <stdexcept>

#include <fmt/format.h>

namespace commbench::workload {

StepRunner::StepRunner(BackendSession& session, const StepPlan& plan, cb_dtype dtype, size_t elem_size,
                       cb_mem op_memory, void* stream, const StepBuffers& buffers, StepCompute& compute,
                       bool needs_progress)
    : session_(session), plan_(plan), dtype_(dtype), elem_size_(elem_size), op_memory_(op_memory),
      stream_(stream), buf_(buffers), compute_(compute), needs_progress_(needs_progress),
      requests_(plan.comms.size(), nullptr), done_(plan.comms.size(), false) {}

StepRunner::~StepRunner() {
  for (cb_request* r : requests_)
    if (r) session_.release(r);
}

cb_op_args StepRunner::args_of(const CommOp& c) const {
  cb_op_args a{};
  a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
  a.op = op_info(c.op).abi_op;
  a.sendbuf = static_cast<char*>(buf_.send) + c.send_offset * elem_size_;
  a.recvbuf = static_cast<char*>(buf_.recv) + c.recv_offset * elem_size_;
  a.count = c.count;
  a.dtype = dtype_;
  a.redop = CB_REDOP_SUM;
  a.mem_type = op_memory_;
  a.stream = stream_;
  return a;
}

// Host backends that advance only inside test(): every outstanding request, once.
void StepRunner::progress() {
  for (size_t i = 0; i < requests_.size(); ++i) {
    if (!requests_[i] || done_[i]) continue;
    if (session_.test(requests_[i])) done_[i] = true;
  }
}

void StepRunner::run(StepMode mode, double compute_s, int32_t timeout_ms) {
  const std::function<void()> on_progress = [this] { progress(); };
  const std::function<void()> none;
  if (mode != StepMode::CommOnly) compute_.begin_step();
  for (const StepAction& a : plan_.actions) {
    const auto i = static_cast<size_t>(a.index);
    switch (a.kind) {
      case ActionKind::Compute:
        if (mode != StepMode::CommOnly) compute_.run(compute_s * a.share, needs_progress_ ? on_progress : none);
        break;
      case ActionKind::Post:
        if (mode == StepMode::ComputeOnly) break;
        if (mode == StepMode::Full) compute_.order_before_post(needs_progress_ ? on_progress : none);
        if (requests_[i]) throw std::logic_error(fmt::format("{} posted twice in one step", plan_.comms[i].what));
        requests_[i] = session_.post(args_of(plan_.comms[i]));
        done_[i] = false;
        break;
      case ActionKind::Wait:
        if (mode == StepMode::ComputeOnly) break;
        if (!requests_[i]) throw std::logic_error(fmt::format("{} waited before it was posted", plan_.comms[i].what));
        if (!done_[i]) session_.wait(requests_[i], timeout_ms);
        session_.release(requests_[i]);
        requests_[i] = nullptr;
        break;
    }
  }
  if (mode != StepMode::CommOnly) compute_.finish();
}

}  // namespace commbench::workload
