#include "workload/workload_case.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "common/scaling_mode.h"
#include "device/cublas.h"
#include "stats/summary.h"
#include "workload/cpu_compute.h"
#include "workload/gpu_compute.h"
#include "workload/step_runner.h"
#include "workload/step_schedule.h"

namespace commbench::workload {
namespace {

using StepClock = std::chrono::steady_clock;

// Device buffers from the backend's allocator or cudaMalloc; host ones from the backend or the host.
class StepFlatBuffers {
 public:
  StepFlatBuffers(CaseEnvironment& env, uint64_t send_bytes, uint64_t recv_bytes) : env_(env) {
    buf_.send = get(std::max<uint64_t>(send_bytes, 64));
    buf_.recv = get(std::max<uint64_t>(recv_bytes, 64));
  }
  ~StepFlatBuffers() {
    put(buf_.send);
    put(buf_.recv);
  }
  const StepBuffers& get() const { return buf_; }

 private:
  bool core_device() const { return env_.memory.op_memory == CB_MEM_CUDA && !env_.session.api().mem_alloc; }
  void* get(uint64_t bytes) {
    if (core_device()) return env_.gpu->alloc_device(bytes);
    return env_.session.alloc(env_.memory.op_memory, bytes);
  }
  void put(void* p) {
    if (!p) return;
    if (core_device()) env_.gpu->free_device(p);
    else env_.session.free(env_.memory.op_memory, p);
  }
  CaseEnvironment& env_;
  StepBuffers buf_;
};

// Per step, the largest of every rank's `mine`, on rank 0 only (reduced on the way there).
std::vector<double> slowest_per_step(CaseEnvironment& env, const std::vector<double>& mine) {
  std::vector<double> out(mine.size(), 0);
  env.bootstrap.reduce_to_rank0(mine.data(), mine.size(), env.bootstrap.rank() == 0 ? out.data() : nullptr,
                                ReduceOp::Max, Millis(remaining_ms(env)));
  return out;
}

nlohmann::json step_summary_ms(const std::vector<double>& s) {
  std::vector<double> ms;
  for (double x : s) ms.push_back(x * 1e3);
  const SampleSummary sum = summarize(ms);
  return {{"p50", sum.p50}, {"p99", sum.p99}, {"mean", sum.mean}, {"min", sum.min}, {"max", sum.max}};
}

}  // namespace

nlohmann::json workload_figures(const std::vector<double>& step_s, const std::vector<double>& compute_s,
                                const std::vector<double>& comm_s, int batch_size, int world, bool communicates) {
  const double step = percentile(step_s, 0.5), comm = percentile(comm_s, 0.5);
  // Paired: round i's whole step against round i's compute-only step, run one after the other,
  // so that a change of load between rounds cancels; the median of the differences.
  std::vector<double> diff;
  for (size_t i = 0; i < std::min(step_s.size(), compute_s.size()); ++i) diff.push_back(step_s[i] - compute_s[i]);
  const double exposed = std::max(0.0, percentile(diff, 0.5));
  nlohmann::json j{{"step_ms", step_summary_ms(step_s)},
                   {"compute_ms", step_summary_ms(compute_s)},
                   {"comm_ms", step_summary_ms(comm_s)},
                   {"exposed_comm_ms", exposed * 1e3},
                   {"samples_per_s", step > 0 ? static_cast<double>(batch_size) * world / step : 0.0}};
  // A step without collectives still times a few µs of "communication" (the phase's barrier):
  // whether it communicates is the plan's to say, not that noise's.
  j["overlap_efficiency"] = communicates && comm > 0 ? nlohmann::json(std::clamp(1.0 - exposed / comm, 0.0, 1.0)) : nlohmann::json(nullptr);
  return j;
}

StepComputeChoice make_step_compute(CaseEnvironment& env) {
  StepComputeChoice out;
  // memory = "cuda" is a GPU run even when a host backend is handed host buffers (staged).
  if (env.memory.requested != CB_MEM_CUDA) {
    out.compute = std::make_unique<CpuCompute>(env.exec.compute == ComputeSource::Time ? CpuCompute::Pace::Deadline
                                                                                       : CpuCompute::Pace::FixedWork);
    return out;
  }
  // Without a GPU the reason is the one every case on cuda memory gives (case_runner.cpp).
  std::string why = "cuda memory: " + (env.gpu_unusable.empty() ? std::string("CUDA is not available") : env.gpu_unusable);
  const cuda::Blas* blas = env.gpu ? cuda::Blas::get(&why) : nullptr;
  // Every rank of a cuda-memory run takes part, so that all decide alike (a rank that skipped
  // this collective would pair the others' with its next one).
  const bool mine = env.gpu && blas;
  const int unusable_rank = env.bootstrap.first_rank_that(!mine, Millis(remaining_ms(env)));
  if (unusable_rank >= 0) {
    out.unusable = mine ? fmt::format("cuBLAS or the GPU is not usable on rank {}", unusable_rank) : why;
    return out;
  }
  const bool stream_ordered = (env.caps.flags & CB_CAP_STREAM_ORDERED) != 0;
  out.compute = std::make_unique<GpuCompute>(*env.gpu, *blas, stream_ordered ? env.gpu->stream() : nullptr);
  return out;
}

int workload_case_count(const Execution& e) { return static_cast<int>(e.overlap.size()); }

CaseRecord workload_case_record(const Execution& e, bool overlap) {
  const Model& model = *e.model;
  const size_t esize = sdk::dtype_size(e.workload_dtype);
  const StepPlan plan = plan_step(model, e.sharding, overlap, e.bucket_bytes, esize, e.world_size);
  CaseSpec spec;
  spec.op = OpKind::Allreduce;  // identity fields only; op is replaced below
  spec.dtype = e.workload_dtype;
  spec.bytes = plan.comm_bytes;
  spec.count = plan.comm_bytes / esize;
  CaseRecord rec = make_case_record(e, spec);
  rec.op = std::string(workload_name(e.workload));
  rec.redop = "";
  rec.method = "per_step";
  rec.rank_aggregation = "slowest_per_step";
  rec.total_bytes = plan.comm_bytes;
  nlohmann::json w;
  w["model"] = model.name;
  w["model_source"] = model.source;
  w["parameters"] = model.parameters();
  w["layers"] = model.layers.size();
  w["activations_per_sample"] = model.activations_per_sample();
  w["forward_flops_per_sample"] = model.forward_flops_per_sample();
  w["batch_size"] = e.batch_size;  // per rank (strong scaling: the global batch / N)
  w["global_batch_size"] = static_cast<int64_t>(e.batch_size) * e.world_size;
  w["scaling"] = std::string(scaling_name(e.scaling));
  w["sharding"] = std::string(sharding_name(e.sharding));
  w["overlap"] = overlap;
  w["collectives_per_step"] = plan.comms.size();
  if (e.sharding == Sharding::Ddp) {
    w["bucket_bytes"] = e.bucket_bytes;
    w["buckets"] = plan.comms.size();
  }
  w["comm_bytes_per_step"] = plan.comm_bytes;
  w["compute"] = std::string(compute_source_name(e.compute));
  rec.workload = std::move(w);
  return rec;
}

std::optional<CaseRecord> run_workload_case(CaseEnvironment& env, bool overlap, const StepComputeChoice& choice,
                                            MemoryPhase* held) {
  const Execution& e = env.exec;
  const Model& model = *e.model;
  const cb_dtype dtype = e.workload_dtype;
  const size_t esize = sdk::dtype_size(dtype);
  const StepPlan plan = plan_step(model, e.sharding, overlap, e.bucket_bytes, esize, e.world_size);

  CaseSpec spec;  // for the capability checks of the step's collectives
  spec.dtype = dtype;
  CaseRecord rec = workload_case_record(e, overlap);
  if (!choice.compute) {
    if (env.bootstrap.rank() != 0) return std::nullopt;
    rec.status = "unsupported";
    rec.reason = choice.unusable;
    return rec;
  }
  StepCompute& compute = *choice.compute;
  const double compute_s = e.compute == ComputeSource::Flops
                               ? 3.0 * model.forward_flops_per_sample() * e.batch_size / compute.flops_per_s()
                               : e.compute_ms / 1e3;

  // What the backend cannot do here (an op, the dtype, the memory) makes the case unsupported,
  // decided alike on every rank from the capabilities, so no rank waits for another.
  for (const CommOp& c : plan.comms) {
    CaseSpec probe = spec;
    probe.op = c.op;
    probe.count = c.count;
    probe.bytes = c.count * esize;
    probe.redop = op_info(c.op).reduction ? std::optional<cb_redop>(CB_REDOP_SUM) : std::nullopt;
    if (std::string why = unsupported_reason(env, probe); !why.empty()) {
      if (env.bootstrap.rank() != 0) return std::nullopt;
      rec.status = "unsupported";
      rec.reason = fmt::format("{} ({})", why, c.what);
      return rec;
    }
  }
  // The three kinds interleaved step by step, so that a change of load on the machine (another
  // job, frequency) falls on all three alike instead of on one phase. In a scope of their own, so
  // that the buffers are freed before the ranks leave the case together (as in case_runner.cpp).
  std::vector<double> my_step, my_comp, my_comm;
  {
    StepFlatBuffers buffers(env, plan.send_elements * esize, plan.recv_elements * esize);
    const bool stream_ordered = env.gpu && (env.caps.flags & CB_CAP_STREAM_ORDERED);
    StepRunner runner(env.session, plan, dtype, esize, env.memory.op_memory,
                      stream_ordered ? static_cast<void*>(env.gpu->stream()) : nullptr, buffers.get(), compute,
                      (env.caps.flags & CB_CAP_NEEDS_PROGRESS) != 0);

    auto timed = [&](StepMode mode) {
      sync_start(env);
      const auto t0 = StepClock::now();
      runner.run(mode, compute_s, remaining_ms(env));
      return std::chrono::duration<double>(StepClock::now() - t0).count();
    };
    for (int i = 0; i < e.warmup; ++i) timed(StepMode::Full);
    for (int i = 0; i < e.steps; ++i) {
      my_step.push_back(timed(StepMode::Full));
      my_comp.push_back(timed(StepMode::ComputeOnly));
      my_comm.push_back(timed(StepMode::CommOnly));
    }
    settle_backend(env);  // the last step's ops complete everywhere before the bootstrap's gathers
    if (held) keep_fuller(*held, memory_now(env.gpu));
  }
  const std::vector<double> step = slowest_per_step(env, my_step);
  const std::vector<double> comp = slowest_per_step(env, my_comp);
  const std::vector<double> comm = slowest_per_step(env, my_comm);
  env.bootstrap.barrier(Millis(remaining_ms(env)));  // the ranks leave the case together
  if (env.bootstrap.rank() != 0) return std::nullopt;

  rec.iterations = e.steps;
  std::vector<double> step_us;
  for (double s : step) step_us.push_back(s * 1e6);
  rec.time_us = summarize(step_us);
  rec.samples_us = step_us;
  nlohmann::json w = workload_figures(step, comp, comm, e.batch_size, e.world_size, !plan.comms.empty());
  w.update(rec.workload);  // what the case is (workload_case_record), after its figures
  w["compute_target_ms"] = compute_s * 1e3;
  w["compute_flops_per_s"] = compute.flops_per_s();
  w["compute_device"] = compute.describe();
  w["compute_engine"] = compute.engine();
  rec.workload = std::move(w);
  return rec;
}

}  // namespace commbench::workload
