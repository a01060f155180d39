#include "measure/case_runner.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <optional>
#include <type_traits>
#include <vector>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "measure/case_buffers.h"
#include "measure/case_measurement.h"
#include "measure/check_pattern.h"
#include "measure/memory_budget.h"
#include "measure/nvtx_ranges.h"
#include "measure/op_executor.h"
#include "measure/rank_aggregation.h"
#include "stats/bandwidth.h"

namespace commbench {
namespace {

enum LocalStatus : int32_t { kOk = 0, kUnsupported = 1, kDoesNotFit = 2 };

// What every rank contributes at the end of a case; fixed layout for the bootstrap gather.
struct RankOutcome {
  int32_t status;
  int32_t iterations;
  int64_t wrong;        // the larger of the checked iterations' counts; -1 = not checked
  int32_t first_check;  // CheckStage of the first mismatch; -1 = none
  int32_t first_buffer = 0;  // CheckedBuffer of the first mismatch
  uint64_t first_index = 0;
  double first_expected = 0, first_got = 0;
  int64_t timed_page_faults = 0;  // OpExecutor::timed_page_faults
};
static_assert(std::is_trivially_copyable_v<RankOutcome>, "gathered as raw bytes");

RankOutcome outcome(int32_t status, bool checked) { return RankOutcome{status, 0, checked ? 0 : -1, -1}; }

// Adds one checked iteration's result to this rank's outcome.
void record_check(RankOutcome& o, CheckStage stage, const CheckResult& r) {
  o.wrong = std::max(o.wrong, r.wrong);
  if (r.first && o.first_check < 0) {
    o.first_check = static_cast<int32_t>(stage);
    o.first_index = r.first->index;
    o.first_expected = r.first->expected;
    o.first_got = r.first->got;
    o.first_buffer = static_cast<int32_t>(r.first->buffer);
  }
}

// One checked iteration: poisoned receive buffers, the check pattern, one untimed op, the check.
CheckResult checked_iteration(CaseEnvironment& env, CaseBuffers& buffers, OpExecutor& exec,
                              const CheckContext& cc, bool check) {
  buffers.prepare_check(cc);
  exec.run_once(remaining_ms(env));
  return check ? buffers.check(cc) : CheckResult{};
}

// The steady-state check (issue 12 §5, as nccl-tests): after the timed iterations, outside the
// timed region, from a synchronised start as the timed iterations had.
// Ends with the backend settled (settle_backend) before the check, which can take long on big
// buffers while a peer's op still waits for this rank.
CheckResult check_after_timing(CaseEnvironment& env, CaseBuffers& buffers, OpExecutor& exec,
                               const CheckContext& cc) {
  sync_start(env);
  exec.resynchronise();
  buffers.prepare_check(cc);
  exec.run_once(remaining_ms(env));
  settle_backend(env);
  return buffers.check(cc);
}

// Host memory CaseBuffers takes when the backend works on host memory (plain or the pinned
// staging copies of device data), in bytes (saturating: sizes near 2^63 must not wrap).
uint64_t host_buffer_bytes(const CaseSpec& c, int world) {
  const long double es = static_cast<long double>(sdk::dtype_size(c.dtype));
  const long double se = send_elements(c.op, c.count, world), re = recv_elements(c.op, c.count, world);
  const long double bytes = (c.placement == Placement::InPlace ? std::max(se, re) : se + re) * es + 64;
  return bytes >= 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

// The reason of a case whose check failed: how many, and the first mismatch. NaN stands for the
// poison (check_pattern.h): expected NaN = the element had to stay untouched.
std::string wrong_reason(const CaseRecord& r) {
  std::string s = fmt::format("wrong results: {} element{} differ", r.wrong, r.wrong == 1 ? "" : "s");
  if (!r.first_wrong) return s;
  const WrongElement& w = *r.first_wrong;
  if (const std::string outside = outside_text(w.buffer, w.index, "its"); !outside.empty())
    return s + fmt::format(" (first: rank {} {}; {} check)", w.rank, outside, w.check);
  const std::string expected = std::isnan(w.expected) ? std::string("it untouched (no output goes there)")
                                                      : fmt::format("{}", w.expected);
  const std::string got = std::isnan(w.got) ? std::string("the poison (nothing was written)") : fmt::format("{}", w.got);
  const char* where = w.buffer == "send" ? " of the send buffer, which must not change" : "";
  return s + fmt::format(" (first: rank {}, element {}{}, expected {}, got {}; {} check)", w.rank, w.index,
                         where, expected, got, w.check);
}

}  // namespace

int32_t remaining_ms(const CaseEnvironment& env) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      env.deadline - std::chrono::steady_clock::now());
  return static_cast<int32_t>(std::clamp<int64_t>(left.count(), 1, INT32_MAX));
}

TraceRecorder& trace_of(CaseEnvironment& env) {
  static TraceRecorder off;
  return env.trace ? *env.trace : off;
}


nlohmann::json trace_case_args(const Execution& e, const CaseSpec& c) {
  nlohmann::json a{{"op", op_info(c.op).name},  {"bytes", c.bytes},     {"count", c.count},
                   {"dtype", case_dtype_name(c)}, {"placement", placement_name(c.placement)},
                   {"memory", sdk::mem_name(e.memory)}, {"run", e.run},  {"backend", e.backend},
                   {"world_size", e.world_size}};
  if (c.redop) a["redop"] = sdk::redop_name(*c.redop);
  return a;
}

void sync_start(CaseEnvironment& env) {
  if (env.caps.ops & CB_BIT(CB_OP_BARRIER)) {
    cb_op_args a{};
    a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
    a.op = CB_OP_BARRIER;
    a.mem_type = env.memory.op_memory;
    a.stream = env.gpu && (env.caps.flags & CB_CAP_STREAM_ORDERED) ? env.gpu->stream() : nullptr;
    env.session.complete(a, remaining_ms(env));
  } else {
    env.bootstrap.barrier(Millis(remaining_ms(env)));
  }
}

void settle_backend(CaseEnvironment& env) {
  if (env.caps.ops & CB_BIT(CB_OP_BARRIER)) sync_start(env);
}

CaseRecord make_case_record(const Execution& e, const CaseSpec& c) {
  CaseRecord r;
  r.experiment = e.experiment;
  r.run = e.run;
  r.run_index = e.run_index;
  r.repeat = e.repeat;
  r.backend = e.backend;
  r.world_size = e.world_size;
  r.op = std::string(op_info(c.op).name);
  r.bytes = c.bytes;
  r.count = c.count;
  r.job_bytes = c.job_bytes;
  r.dtype = case_dtype_name(c);
  r.redop = c.redop ? std::string(sdk::redop_name(*c.redop)) : "";
  r.placement = placement_name(c.placement);
  r.memory = std::string(sdk::mem_name(e.memory));
  r.oversubscribe_gpu = e.memory == CB_MEM_CUDA && e.oversubscribe_gpu;
  if (e.cpu_binding != CpuBinding::None) r.cpu_binding = std::string(cpu_binding_name(e.cpu_binding));
  r.root = c.root;
  if (between_two_peers(c.op)) r.peers = e.peers;
  if (uses_window(c.op)) r.window = e.window;
  r.options = e.options;
  r.env = e.env;
  r.warmup = e.warmup;
  r.method = std::string(method_name(e.method));
  // What a measured case's series will be (measure_case sets the same label): set here too, so a
  // record of a case that never measured (skipped, broken) still matches its measured twin.
  r.rank_aggregation = series_rule(e.method, e.rank_aggregation, reporting_rank(e, c.op), e.world_size).label;
  // The all-pairs sweep has its own layout whatever the run's method: a barrier before every
  // transfer, the longer of the pair's two times (docs/metrics.md, "The all-pairs sweep").
  if (c.op == OpKind::AllPairs) {
    r.method = std::string(method_name(MeasureMethod::PerIteration));
    r.rank_aggregation = "slowest_per_iteration";
  }
  r.total_bytes = nccl_tests_bytes(c.op, c.bytes, e.world_size);
  return r;
}

namespace {

// An NVTX range "<case> <phase>" while a profiler is attached (measure/nvtx_ranges.h).
class NvtxPhase {
 public:
  NvtxPhase(const std::string& case_name, const char* phase) : on_(nvtx::active()) {
    if (on_) nvtx::push(fmt::format("{} {}", case_name, phase).c_str());
  }
  ~NvtxPhase() {
    if (on_) nvtx::pop();
  }
  NvtxPhase(const NvtxPhase&) = delete;
  NvtxPhase& operator=(const NvtxPhase&) = delete;

 private:
  bool on_;
};

// Iterations for this case: fixed, or enough to fill min_time. Rank 0 decides for everybody,
// since every rank must run the same number of collectives, from the busiest rank's warm-up
// (a rank outside a pattern's `peers` times nothing, and once made it max_iterations).
int decide_iterations(CaseEnvironment& env, double warm_total_us, int warm_count) {
  const Execution& e = env.exec;
  int32_t iters = e.iterations;
  if (e.min_time_s <= 0) return iters;
  const bool root = env.bootstrap.rank() == 0;
  double per_op = warm_count > 0 ? warm_total_us / warm_count : 0;
  std::vector<double> everyone(root ? static_cast<size_t>(env.bootstrap.world_size()) : 0);
  env.bootstrap.gather(&per_op, sizeof(per_op), everyone.data(), 0, Millis(remaining_ms(env)));
  if (root) {
    for (double p : everyone) per_op = std::max(per_op, p);
    const double want = per_op > 0 ? std::ceil(e.min_time_s * 1e6 / per_op) : e.max_iterations;
    iters = static_cast<int32_t>(std::clamp<double>(want, e.iterations, e.max_iterations));
  }
  settle_backend(env);
  env.bootstrap.broadcast(&iters, sizeof(iters), 0, Millis(remaining_ms(env)));
  return iters;
}

}  // namespace

std::string unsupported_reason(const cb_capabilities& caps, const CaseSpec& c, const MemoryPlan& plan) {
  const OpInfo& info = op_info(c.op);
  if (info.point_to_point) {
    if (!(caps.ops & CB_BIT(CB_OP_SEND)) || !(caps.ops & CB_BIT(CB_OP_RECV)))
      return "the backend has no send/recv";
  } else if (!(caps.ops & CB_BIT(info.abi_op))) {
    return fmt::format("the backend has no {}", info.name);
  }
  if (!plan.usable)
    return fmt::format("memory type {} is not supported", sdk::mem_name(plan.requested));
  // Staging copies whole buffers around one op; a p2p pattern's many small posts per iteration
  // would need a copy per message, which nothing the benchmarks compare against does.
  if (plan.staged && info.point_to_point)
    return "cuda memory through a host-memory backend is staged for collectives only, not for "
           "point-to-point patterns";
  if (c.op == OpKind::Barrier) return "";
  const uint64_t dtypes = info.reduction ? caps.reduce_dtypes : caps.dtypes;
  if (!(dtypes & CB_BIT(c.dtype)))
    return fmt::format("dtype {} is not supported{}", sdk::dtype_name(c.dtype),
                       info.reduction ? " for reductions" : "");
  if (c.redop && !(caps.redops & CB_BIT(*c.redop)))
    return fmt::format("reduce op {} is not supported", sdk::redop_name(*c.redop));
  if (c.placement == Placement::InPlace && !(caps.flags & CB_CAP_IN_PLACE))
    return "in-place operation is not supported";
  if (c.placement == Placement::OutOfPlace && !(caps.flags & CB_CAP_OUT_OF_PLACE))
    return "out-of-place operation is not supported";
  return "";
}

std::string unsupported_reason(const CaseEnvironment& env, const CaseSpec& spec) {
  if (env.memory.requested == CB_MEM_CUDA && !env.gpu)
    return "cuda memory: " + (env.gpu_unusable.empty() ? std::string("CUDA is not available") : env.gpu_unusable);
  return unsupported_reason(env.caps, spec, env.memory);
}

std::optional<CaseRecord> run_case(CaseEnvironment& env, const CaseSpec& spec) {
  const Execution& e = env.exec;
  const int rank = env.bootstrap.rank(), world = env.bootstrap.world_size();
  CaseRecord rec = make_case_record(e, spec);
  TimingMethod timing = env.timing;  // refined by the executor (batching applies to collectives)
  rec.timing = std::string(timing_name(timing));
  rec.staging = staging_name(env.memory);
  std::string reason = unsupported_reason(env, spec);

  RankOutcome mine = outcome(reason.empty() ? kOk : kUnsupported, e.check);
  Measured measured;
  double host_us_per_op = 0;
  // Buffers first, and every rank learns whether every rank got them: a size that does not fit
  // on one rank is skipped by all (the others must not enter a collective it will never join).
  std::unique_ptr<CaseBuffers> owned;
  if (reason.empty()) {
    int32_t allocated = 1;
    // malloc grants what the machine (or the cgroup) cannot supply; the OOM killer would then
    // take the rank. Ask first (measure/memory_budget.h). Device memory is checked by CaseBuffers.
    if (env.memory.op_memory != CB_MEM_CUDA)
      reason = memory_shortfall(host_buffer_bytes(spec, world), env.local_world);
    if (!reason.empty()) {
      allocated = 0;
    } else {
      try {
        owned = std::make_unique<CaseBuffers>(env.session, env.gpu, env.memory, spec, rank, world);
        env.buffers_device_peak = std::max(env.buffers_device_peak, owned->device_bytes());
      } catch (const PluginError& err) {
        if (err.status() != CB_ERR_RESOURCE_EXHAUSTED) throw;
        allocated = 0;
        // The core's own CUDA calls: "cudaMalloc: cudaErrorMemoryAllocation (...)", no "backend".
        reason = err.plugin() == cuda::kErrorSource ? err.operation() + ": " + err.plugin_message() : err.what();
      }
    }
    const int short_rank = env.bootstrap.first_rank_that(allocated == 0, Millis(remaining_ms(env)));
    if (short_rank >= 0) {
      // The record is rank 0's: it gets the short rank's own reason (a failed cudaMalloc says
      // more than "could not allocate"). Only on this path, so a case that fits pays nothing.
      std::array<char, 512> why{};
      if (rank == short_rank) {
        size_t n = std::min(reason.size(), why.size() - 1);
        while (n > 0 && n < reason.size() && (static_cast<unsigned char>(reason[n]) & 0xC0) == 0x80) --n;  // whole UTF-8
        reason.copy(why.data(), n);
      }
      env.bootstrap.broadcast(why.data(), why.size(), short_rank, Millis(remaining_ms(env)));
      if (rank != short_rank && why[0] != '\0') reason = fmt::format("rank {}: {}", short_rank, why.data());
    }
    if (short_rank >= 0 && mine.status == kOk) {
      mine.status = kDoesNotFit;
      if (reason.empty()) reason = fmt::format("rank {} could not allocate this case's buffers", short_rank);
      owned.reset();
    }
  }
  if (reason.empty()) {
    try {
      CaseBuffers& buffers = *owned;
      ExecutorSetup setup;
      setup.op_memory = env.memory.op_memory;
      setup.gpu = env.gpu;
      setup.stream_ordered = env.gpu && (env.caps.flags & CB_CAP_STREAM_ORDERED);
      setup.group_p2p = setup.stream_ordered && (env.caps.flags & CB_CAP_GROUPS) && env.session.has_groups();
      setup.timing = setup.stream_ordered ? env.timing : TimingMethod::Host;
      setup.staging = buffers.staging();
      OpExecutor exec(env.session, e, spec, rank, buffers.bufs(), setup);
      if (e.method == MeasureMethod::Graph) {
        // The same on every rank: it depends on the capabilities and the case only.
        reason = exec.graph_reason(env.caps.flags & CB_CAP_GRAPH_CAPTURE);
        if (!reason.empty()) throw PluginError(CB_ERR_UNIMPLEMENTED, "commbench", "timing", reason);
      }
      CheckContext cc{spec.op, spec.dtype, spec.redop.value_or(CB_REDOP_SUM), rank, world,
                      spec.root, spec.count, {e.peers[0], e.peers[1]},
                      spec.placement == Placement::InPlace};
      TraceRecorder& trace = trace_of(env);
      const bool nvtx_on = nvtx::active();
      const std::string case_name = trace.on() || nvtx_on ? describe_case(spec) : std::string();
      trace.set_case(case_name, trace_case_args(e, spec));
      // The first post also tells us whether the backend rejects this case at run time.
      {
        TraceScope t(trace, TracePhase::Check);
        NvtxPhase n(case_name, "check");
        const CheckResult first = checked_iteration(env, buffers, exec, cc, e.check);
        if (e.check) record_check(mine, CheckStage::FirstIteration, first);
      }
      double warm_total = 0;
      {
        TraceScope t(trace, TracePhase::WarmUp);
        NvtxPhase n(case_name, "warm-up");
        for (int i = 0; i < e.warmup; ++i) warm_total += exec.run_once(remaining_ms(env));
        if (e.warmup == 0 && e.min_time_s > 0) warm_total = exec.run_once(remaining_ms(env));
      }
      const int iters = decide_iterations(env, warm_total, std::max(e.warmup, e.min_time_s > 0 ? 1 : 0));
      trace.reserve(static_cast<size_t>(iters) + 2);
      timing = exec.timing();
      {
        TraceScope timed_span(trace, TracePhase::Timed);
        NvtxPhase timed_range(case_name, "timed");
        measured = measure_case(env, exec, iters, case_name);
      }
      host_us_per_op = exec.host_us_per_op();
      if (e.check) {
        TraceScope t(trace, TracePhase::Check);
        NvtxPhase n(case_name, "check");
        cc.generation = 1;  // new inputs: a result cached from the first check cannot pass
        record_check(mine, CheckStage::AfterTiming, check_after_timing(env, buffers, exec, cc));
      }
      mine.iterations = measured.iterations;
      mine.timed_page_faults = exec.timed_page_faults();
    } catch (const PluginError& err) {
      // Only "this case is not implemented" is survivable; the same args fail on every rank.
      // No settle_backend here: if only some ranks were refused, the others would wait in the
      // barrier for the timeout. Refusals mostly come at a case's first post, before any op
      // ran; a later one (a stream-ordered backend refusing graph capture) leaves this gap.
      if (err.status() != CB_ERR_UNIMPLEMENTED) throw;
      // Mismatches a check already found stay found: a backend that computed wrong results and
      // then refused the case (warm-up, the timed loop) must not pass as "unsupported, #wrong 0".
      const RankOutcome so_far = mine;
      mine = outcome(kUnsupported, e.check);
      if (so_far.wrong > 0) {
        mine.wrong = so_far.wrong;
        mine.first_check = so_far.first_check;
        mine.first_buffer = so_far.first_buffer;
        mine.first_index = so_far.first_index;
        mine.first_expected = so_far.first_expected;
        mine.first_got = so_far.first_got;
      }
      if (reason.empty()) reason = err.what();
    }
  }

  // Everybody reports to rank 0, so a case unsupported on one rank is unsupported for the record.
  // The buffers go first, and the ranks leave together: the gather lets the others go on at once,
  // and the next case's memory check (or a footprint's free-memory reading) must not run while
  // another rank of the host still holds this case's buffers.
  owned.reset();
  std::vector<RankOutcome> all(rank == 0 ? static_cast<size_t>(world) : 0);
  env.bootstrap.gather(&mine, sizeof(mine), all.data(), 0, Millis(remaining_ms(env)));
  env.bootstrap.barrier(Millis(remaining_ms(env)));
  if (rank != 0) return std::nullopt;
  bool any_unsupported = false, too_big = false;
  int iters = all[0].iterations;
  for (const auto& o : all) {
    any_unsupported |= o.status != kOk;
    too_big |= o.status == kDoesNotFit;
    if (o.status == kOk && o.iterations != iters) any_unsupported = true;  // cannot happen; be safe
  }

  if (too_big) {
    rec.status = "skipped";
    rec.reason = "does not fit in memory: " + reason;
    return rec;
  }
  // Sums the ranks' mismatches into the record; a case with any is failed, whatever else it is.
  const auto add_checks = [&] {
    if (!e.check) return;
    rec.wrong = 0;
    for (int r = 0; r < world; ++r) {
      const RankOutcome& o = all[static_cast<size_t>(r)];
      rec.wrong += std::max<int64_t>(0, o.wrong);
      if (o.first_check >= 0 && !rec.first_wrong)
        rec.first_wrong = WrongElement{r, o.first_index, o.first_expected, o.first_got,
                                       std::string(check_stage_name(static_cast<CheckStage>(o.first_check))),
                                       std::string(checked_buffer_name(static_cast<CheckedBuffer>(o.first_buffer)))};
    }
    // Wrong results are a failed case, whatever its times: no table may rank it.
    if (rec.wrong > 0) {
      rec.status = "failed";
      rec.reason = wrong_reason(rec);
    }
  };
  if (any_unsupported) {
    rec.status = "unsupported";
    rec.reason = reason.empty() ? "another rank reported this case unsupported" : reason;
    add_checks();  // wrong results found before a late refusal fail the case
    if (rec.status == "failed") {
      rec.reason += fmt::format("; then the backend refused the case ({})", reason.empty() ? "on another rank" : reason);
      rec.time_us = {};
    } else {
      rec.wrong = -1;  // unsupported: not checked as a whole
    }
    return rec;
  }
  rec.timing = std::string(timing_name(timing));
  rec.iterations = iters;
  rec.rank_aggregation = measured.times.label;
  rec.samples_us = std::move(measured.times.samples_us);
  rec.rank_mean_us = std::move(measured.times.rank_mean_us);
  rec.time_us = measured.summary;
  rec.target_cv = e.target_cv;
  rec.cv_reached = measured.cv_reached;
  const Bandwidth bw = bandwidth(spec.op, spec.bytes, world, rec.time_us.mean);
  rec.algbw_gbps = bw.algbw_gbps;
  rec.busbw_gbps = bw.busbw_gbps;
  rec.msg_rate_mps = message_rate_mps(spec.op, world, rec.time_us.mean);
  rec.host_us_per_op = host_us_per_op;
  rec.timed_page_faults = 0;  // the most of any rank; not measured (-1) if any rank could not read it
  for (const RankOutcome& o : all)
    rec.timed_page_faults = o.timed_page_faults < 0 || rec.timed_page_faults < 0
                                ? -1 : std::max(rec.timed_page_faults, o.timed_page_faults);
  add_checks();
  return rec;
}

}  // namespace commbench
