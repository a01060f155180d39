// One workload case (docs/workloads.md): a (model, batch, sharding, overlap) on this execution's
// ranks. Warm-up steps, then `steps` whole steps, `steps` compute-only and `steps`
// communication-only steps, each started together on all ranks; per step the slowest rank's time
// (a synchronous data-parallel step ends when its last rank does). Collective over the ranks.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "measure/case_record.h"
#include "measure/case_runner.h"
#include "workload/memory_run.h"
#include "workload/step_compute.h"

namespace commbench::workload {

// The figures of a case from its per-step times in seconds (each the slowest rank's), as the
// record's `workload` object: step/compute/comm p50 and p99, exposed communication, overlap
// efficiency, samples/s. Exposed = median over rounds of (step − compute-only step), ≥ 0 (the
// rounds pair the two, docs/workloads.md); overlap efficiency = 1 − exposed / comm p50, clamped
// to [0, 1], null when the step has no collective (`communicates` false) or they took no time;
// samples/s = batch × world / step p50.
nlohmann::json workload_figures(const std::vector<double>& step_s, const std::vector<double>& compute_s,
                                const std::vector<double>& comm_s, int batch_size, int world, bool communicates);

// The compute of this execution's steps, made (and calibrated) once: cuBLAS SGEMMs on the rank's
// GPU for memory = "cuda", else the CPU loop. `compute` is null when the GPU compute cannot run on
// some rank (cuBLAS missing): `unusable` then says why, alike on every rank.
struct StepComputeChoice {
  std::unique_ptr<StepCompute> compute;
  std::string unusable;
};
StepComputeChoice make_step_compute(CaseEnvironment& env);

// Returns the record on rank 0, nullopt elsewhere; "unsupported" with the reason when the choice
// has no compute. `held` (optional) is made the fuller of itself and this rank's memory right
// after the timed steps, while the step's buffers and the compute's are still allocated.
std::optional<CaseRecord> run_workload_case(CaseEnvironment& env, bool overlap, const StepComputeChoice& compute,
                                            MemoryPhase* held = nullptr);

// Records a workload execution produces: one per `overlap` value.
int workload_case_count(const Execution& e);

// The record of the case with this `overlap` before anything is measured: what it is (op, bytes
// per step, method) and `workload`'s model, batch and step layout, so that one that is not
// measured (unsupported, or broken by a failed execution) still says which case it was.
CaseRecord workload_case_record(const Execution& e, bool overlap);

}  // namespace commbench::workload
