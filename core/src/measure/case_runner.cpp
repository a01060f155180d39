#include "measure/case_runner.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "measure/check_pattern.h"
#include "measure/memory_budget.h"
#include "measure/op_executor.h"
#include "stats/bandwidth.h"

namespace commbench {
namespace {

enum LocalStatus : int32_t { kOk = 0, kUnsupported = 1, kDoesNotFit = 2 };

// What every rank contributes at the end of a case; fixed layout for the bootstrap allgather.
struct RankOutcome {
  int32_t status;
  int32_t iterations;
  int64_t wrong;
};

// Buffers of one case, laid out per the ABI's in-place rules; freed on scope exit.
class CaseBuffers {
 public:
  CaseBuffers(BackendSession& s, cb_mem mem, const CaseSpec& c, int rank, int world) : s_(s), mem_(mem) {
    const size_t es = sdk::dtype_size(c.dtype);
    const uint64_t se = send_elements(c.op, c.count, world), re = recv_elements(c.op, c.count, world);
    const size_t block = static_cast<size_t>(c.count) * es * static_cast<size_t>(rank);
    if (c.placement == Placement::InPlace) {
      base_ = s_.alloc(mem_, std::max(se, re) * es);
      auto* p = static_cast<char*>(base_);
      bufs_.send = bufs_.recv = base_;
      if (c.op == OpKind::Allgather || c.op == OpKind::Gather) bufs_.send = p + block;
      if (c.op == OpKind::Reducescatter || c.op == OpKind::Scatter) bufs_.recv = p + block;
    } else {
      base_ = s_.alloc(mem_, se * es);
      second_ = s_.alloc(mem_, re * es);
      bufs_.send = base_;
      bufs_.recv = second_;
    }
    ack_ = s_.alloc(mem_, 64);
    bufs_.ack = ack_;
    send_elems_ = se;
    recv_elems_ = re;
  }
  ~CaseBuffers() {
    for (void* p : {base_, second_, ack_}) {
      try { s_.free(mem_, p); } catch (...) {}  // freeing never fails a measured case
    }
  }
  const OpBuffers& bufs() const { return bufs_; }
  uint64_t send_elems() const { return send_elems_; }
  uint64_t recv_elems() const { return recv_elems_; }

 private:
  BackendSession& s_;
  cb_mem mem_;
  void* base_ = nullptr;
  void* second_ = nullptr;
  void* ack_ = nullptr;
  OpBuffers bufs_;
  uint64_t send_elems_ = 0, recv_elems_ = 0;
};

// What CaseBuffers allocates, in bytes (saturating: sizes near 2^63 must not wrap).
uint64_t host_buffer_bytes(const CaseSpec& c, int world) {
  const long double es = static_cast<long double>(sdk::dtype_size(c.dtype));
  const long double se = send_elements(c.op, c.count, world), re = recv_elements(c.op, c.count, world);
  const long double bytes = (c.placement == Placement::InPlace ? std::max(se, re) : se + re) * es + 64;
  return bytes >= 1.8e19L ? UINT64_MAX : static_cast<uint64_t>(bytes);
}

}  // namespace

int32_t remaining_ms(const CaseEnvironment& env) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      env.deadline - std::chrono::steady_clock::now());
  return static_cast<int32_t>(std::clamp<int64_t>(left.count(), 1, INT32_MAX));
}

void sync_start(CaseEnvironment& env) {
  if (env.caps.ops & CB_BIT(CB_OP_BARRIER)) {
    cb_op_args a{};
    a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
    a.op = CB_OP_BARRIER;
    a.mem_type = env.exec.memory;
    env.session.complete(a, remaining_ms(env));
  } else {
    env.bootstrap.barrier(Millis(remaining_ms(env)));
  }
}

CaseRecord make_case_record(const Execution& e, const CaseSpec& c) {
  CaseRecord r;
  r.experiment = e.experiment;
  r.run = e.run;
  r.run_index = e.run_index;
  r.backend = e.backend;
  r.world_size = e.world_size;
  r.op = std::string(op_info(c.op).name);
  r.bytes = c.bytes;
  r.count = c.count;
  r.dtype = std::string(sdk::dtype_name(c.dtype));
  r.redop = c.redop ? std::string(sdk::redop_name(*c.redop)) : "";
  r.placement = placement_name(c.placement);
  r.memory = std::string(sdk::mem_name(e.memory));
  r.root = c.root;
  r.warmup = e.warmup;
  return r;
}

namespace {

// Iterations for this case: fixed, or enough to fill min_time (rank 0 decides for everybody
// from its own warm-up, since every rank must run the same number of collectives).
int decide_iterations(CaseEnvironment& env, double warm_total_us, int warm_count) {
  const Execution& e = env.exec;
  int32_t iters = e.iterations;
  if (e.min_time_s > 0 && env.bootstrap.rank() == 0) {
    const double per_op = warm_count > 0 ? warm_total_us / warm_count : 0;
    const double want = per_op > 0 ? std::ceil(e.min_time_s * 1e6 / per_op) : e.max_iterations;
    iters = static_cast<int32_t>(std::clamp<double>(want, e.iterations, e.max_iterations));
  }
  if (e.min_time_s > 0) env.bootstrap.broadcast(&iters, sizeof(iters), 0, Millis(remaining_ms(env)));
  return iters;
}

}  // namespace

std::string unsupported_reason(const cb_capabilities& caps, const CaseSpec& c, cb_mem memory) {
  const OpInfo& info = op_info(c.op);
  if (info.point_to_point) {
    if (!(caps.ops & CB_BIT(CB_OP_SEND)) || !(caps.ops & CB_BIT(CB_OP_RECV)))
      return "the backend has no send/recv";
  } else if (!(caps.ops & CB_BIT(info.abi_op))) {
    return fmt::format("the backend has no {}", info.name);
  }
  if (!(caps.mem_types & CB_BIT(memory)))
    return fmt::format("memory type {} is not supported", sdk::mem_name(memory));
  // The core writes check patterns and reads results with the CPU; device buffers need CUDA in
  // the worker (fill/verify kernels or copies, CUDA-event timing), which is not built yet.
  if (memory == CB_MEM_CUDA)
    return "cuda memory: the core cannot fill, check or time device buffers yet (CUDA in the core, "
           "issue 3, is not built)";
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

std::optional<CaseRecord> run_case(CaseEnvironment& env, const CaseSpec& spec) {
  const Execution& e = env.exec;
  const int rank = env.bootstrap.rank(), world = env.bootstrap.world_size();
  CaseRecord rec = make_case_record(e, spec);
  std::string reason = unsupported_reason(env.caps, spec, e.memory);

  RankOutcome mine{reason.empty() ? kOk : kUnsupported, 0, e.check ? 0 : -1};
  std::vector<double> samples;
  // Buffers first, and every rank learns whether every rank got them: a size that does not fit
  // on one rank is skipped by all (the others must not enter a collective it will never join).
  std::unique_ptr<CaseBuffers> owned;
  if (reason.empty()) {
    int32_t allocated = 1;
    // malloc grants what the machine (or the cgroup) cannot supply; the OOM killer would then
    // take the rank. Ask first (measure/memory_budget.h).
    if (e.memory != CB_MEM_CUDA) reason = memory_shortfall(host_buffer_bytes(spec, world), env.local_world);
    if (!reason.empty()) {
      allocated = 0;
    } else {
      try {
        owned = std::make_unique<CaseBuffers>(env.session, e.memory, spec, rank, world);
      } catch (const PluginError& err) {
        if (err.status() != CB_ERR_RESOURCE_EXHAUSTED) throw;
        allocated = 0;
        reason = err.what();
      }
    }
    std::vector<int32_t> everyone_allocated(static_cast<size_t>(world));
    env.bootstrap.allgather(&allocated, sizeof(allocated), everyone_allocated.data(), Millis(remaining_ms(env)));
    for (int r = 0; r < world && mine.status == kOk; ++r)
      if (!everyone_allocated[static_cast<size_t>(r)]) {
        mine.status = kDoesNotFit;
        if (reason.empty()) reason = fmt::format("rank {} could not allocate this case's buffers", r);
        owned.reset();
      }
  }
  if (reason.empty()) {
    try {
      CaseBuffers& buffers = *owned;
      OpExecutor exec(env.session, e, spec, rank, buffers.bufs());
      CheckContext cc{spec.op, spec.dtype, spec.redop.value_or(CB_REDOP_SUM), rank, world,
                      spec.root, spec.count, {e.peers[0], e.peers[1]}};
      // The first post also tells us whether the backend rejects this case at run time.
      fill_send(cc, buffers.bufs().send, buffers.send_elems());
      exec.run_once(remaining_ms(env));
      if (e.check) mine.wrong = count_wrong(cc, buffers.bufs().recv, buffers.recv_elems());
      double warm_total = 0;
      for (int i = 0; i < e.warmup; ++i) warm_total += exec.run_once(remaining_ms(env));
      if (e.warmup == 0 && e.min_time_s > 0) warm_total = exec.run_once(remaining_ms(env));
      const int iters = decide_iterations(env, warm_total, std::max(e.warmup, e.min_time_s > 0 ? 1 : 0));
      samples.reserve(static_cast<size_t>(iters));
      const bool barrier_each = exec.barrier_each_iteration();
      if (!barrier_each) {
        sync_start(env);  // once: the timed iterations then run back to back
        exec.resynchronise();
      }
      for (int i = 0; i < iters; ++i) {
        if (barrier_each) sync_start(env);
        samples.push_back(exec.run_once(remaining_ms(env)));
      }
      mine.iterations = iters;
    } catch (const PluginError& err) {
      // Only "this case is not implemented" is survivable; the same args fail on every rank.
      if (err.status() != CB_ERR_UNIMPLEMENTED) throw;
      mine = RankOutcome{kUnsupported, 0, e.check ? 0 : -1};
      reason = err.what();
      samples.clear();
    }
  }

  // Everybody reports, so a case unsupported on one rank is unsupported for the record.
  std::vector<RankOutcome> all(static_cast<size_t>(world));
  env.bootstrap.allgather(&mine, sizeof(mine), all.data(), Millis(remaining_ms(env)));
  bool any_unsupported = false, too_big = false;
  int iters = all[0].iterations;
  for (const auto& o : all) {
    any_unsupported |= o.status != kOk;
    too_big |= o.status == kDoesNotFit;
    if (o.status == kOk && o.iterations != iters) any_unsupported = true;  // cannot happen; be safe
  }
  std::vector<double> everyone;
  if (!any_unsupported && iters > 0) {
    samples.resize(static_cast<size_t>(iters), 0.0);
    everyone.resize(samples.size() * static_cast<size_t>(world));
    env.bootstrap.allgather(samples.data(), samples.size() * sizeof(double), everyone.data(),
                            Millis(remaining_ms(env)));
  }
  if (rank != 0) return std::nullopt;

  if (too_big) {
    rec.status = "skipped";
    rec.reason = "does not fit in memory: " + reason;
    return rec;
  }
  if (any_unsupported) {
    rec.status = "unsupported";
    rec.reason = reason.empty() ? "another rank reported this case unsupported" : reason;
    return rec;
  }
  rec.iterations = iters;
  rec.samples_us.assign(static_cast<size_t>(iters), 0.0);
  rec.rank_mean_us.assign(static_cast<size_t>(world), 0.0);
  for (int r = 0; r < world; ++r) {
    for (int i = 0; i < iters; ++i) {
      const double t = everyone[static_cast<size_t>(r) * iters + i];
      rec.samples_us[i] = std::max(rec.samples_us[i], t);
      rec.rank_mean_us[r] += t / iters;
    }
  }
  rec.time_us = summarize(rec.samples_us);
  const Bandwidth bw = bandwidth(spec.op, spec.bytes, world, rec.time_us.mean);
  rec.algbw_gbps = bw.algbw_gbps;
  rec.busbw_gbps = bw.busbw_gbps;
  rec.msg_rate_mps = message_rate_mps(spec.op, world, rec.time_us.mean);
  if (e.check) {
    rec.wrong = 0;
    for (const auto& o : all) rec.wrong += o.wrong;
  }
  return rec;
}

}  // namespace commbench
