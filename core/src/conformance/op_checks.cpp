// Every advertised op x dtype x redop x placement x root x count, run through the benchmark's
// own buffers, executor and check patterns, with exact expected results; and collectives in
// flight together where the plugin says posts are asynchronous.
#include <bit>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "conformance/suite_context.h"
#include "experiment/experiment.h"
#include "measure/case_buffers.h"
#include "measure/check_pattern.h"
#include "measure/op_executor.h"
#include "plugin/plugin_error.h"
#include "worker/memory_footprint.h"

namespace commbench {

void SuiteContext::report(const std::string& name, ConformanceResult result, const std::string& detail) const {
  const char* r = result == ConformanceResult::Pass ? "pass" : result == ConformanceResult::Fail ? "fail" : "skip";
  out.send({{"type", "check"}, {"name", name}, {"result", r}, {"detail", detail}});
}

std::vector<int64_t> SuiteContext::agree(int64_t mine) const {
  std::vector<int64_t> all(static_cast<size_t>(world));
  boot.allgather(&mine, sizeof(mine), all.data(), Millis(std::max(op_timeout_ms, 1000) * 2));
  return all;
}

std::vector<cb_mem> SuiteContext::usable_memory() const {
  std::vector<cb_mem> mems;
  for (cb_mem m : {CB_MEM_HOST, CB_MEM_HOST_PINNED, CB_MEM_CUDA}) {
    if (!(caps.mem_types & CB_BIT(m))) continue;
    if (m != CB_MEM_HOST && !gpu) continue;  // pinned and device memory come from the CUDA runtime
    mems.push_back(m);
  }
  return mems;
}

CallResult call(const cb_backend_api& api, cb_error* error) {
  CallResult r;
  if (error == nullptr) return r;
  r.code = plugin_error_status(api, error);  // as the core reads it: range-checked, CB_OK is internal
  const char* m = api.error_message(error);
  r.message = m ? m : "";
  api.error_destroy(error);
  return r;
}

std::string describe_case(const CaseSpec& c, cb_mem mem) {
  const OpInfo& info = op_info(c.op);
  std::string s = fmt::format("{} {}", info.name, sdk::dtype_name(c.dtype));
  if (c.redop) s += fmt::format(" {}", sdk::redop_name(*c.redop));
  if (!info.point_to_point && c.op != OpKind::Barrier) s += fmt::format(" {}", placement_name(c.placement));
  if (info.rooted) s += fmt::format(" root {}", c.root);
  s += fmt::format(" count {}", c.count);
  if (mem != CB_MEM_HOST) s += fmt::format(" ({} memory)", sdk::mem_name(mem));
  return s;
}

ScratchMemory::ScratchMemory(SuiteContext& ctx, cb_mem mem, size_t bytes) : ctx_(ctx), mem_(mem) {
  if (mem == CB_MEM_CUDA && ctx.gpu && !ctx.api().mem_alloc) {
    ptr_ = ctx.gpu->alloc_device(bytes);
    from_gpu_ = true;
  } else if (mem == CB_MEM_CUDA || ctx.api().mem_alloc) {
    ptr_ = ctx.session.alloc(mem, bytes);
  } else {
    ptr_ = ctx.session.alloc(CB_MEM_HOST, bytes);  // host memory, whatever the label
    mem_ = CB_MEM_HOST;
  }
}

ScratchMemory::~ScratchMemory() {
  try {
    if (from_gpu_) ctx_.gpu->free_device(ptr_);
    else ctx_.session.free(mem_, ptr_);
  } catch (const std::exception&) {
    // A failed free is the plugin's problem to report elsewhere; never a throw from here.
  }
}

cb_op_args base_args(const SuiteContext& ctx, cb_op op, void* send, void* recv, size_t count,
                     cb_dtype dtype, cb_mem mem) {
  cb_op_args a{};
  a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
  a.op = op;
  a.sendbuf = send;
  a.recvbuf = recv;
  a.count = count;
  a.dtype = dtype;
  a.redop = CB_REDOP_SUM;
  a.mem_type = mem;
  a.stream = ctx.gpu && mem == CB_MEM_CUDA && (ctx.caps.flags & CB_CAP_STREAM_ORDERED) ? ctx.gpu->stream() : nullptr;
  return a;
}

namespace {

constexpr uint64_t kCounts[] = {0, 1, 7, 1001};

// One case's outcome on this rank, as agreed over all ranks.
struct CaseOutcome {
  enum Kind : int64_t { kOk = 0, kRefused = 1, kFailed = 2 };
  Kind mine = kOk;
  int64_t wrong = 0;
  std::optional<Mismatch> first;  // the first wrong element (check_pattern's own report)
  int wrong_call = 0;             // which call of the case was wrong first (0: the first)
  const char* wrong_path = "";    // how that call reached the plugin where it has two paths, else ""
  const char* right_path = "";    // how the calls before it did
  std::string error;        // this rank's error (kFailed)
  bool refused_everywhere = false;
  bool failed_anywhere = false;
  bool refusal_split = false;  // some ranks refused, others ran it
};

Execution conformance_execution(const SuiteContext& ctx, cb_mem mem) {
  Execution e;
  e.world_size = ctx.world;
  e.memory = mem;
  e.window = 8;  // p2p patterns keep 8 requests in flight: waiting on one must progress the rest
  e.check = true;
  e.timeout_s = ctx.op_timeout_ms / 1000.0;
  return e;
}

// `check` names the op's check: a rank whose case failed reports it at once, before the ranks
// agree, so the reason is known even if the others then never answer.
// `calls` times on the same buffers, re-poisoned and refilled with other input values before
// each: a backend that keeps state between calls with the same arguments (a cached result, a
// reused staging buffer left stale) is wrong on the second call and right on the first (a
// probe's plugin was).
ExecutorSetup executor_setup(const SuiteContext& ctx, cb_mem mem, const MemoryPlan& plan, const CaseBuffers& buffers) {
  ExecutorSetup setup;
  setup.op_memory = plan.op_memory;
  setup.gpu = ctx.gpu;
  setup.stream_ordered = ctx.gpu && mem == CB_MEM_CUDA && (ctx.caps.flags & CB_CAP_STREAM_ORDERED);
  setup.group_p2p = setup.stream_ordered && (ctx.caps.flags & CB_CAP_GROUPS) && ctx.session.has_groups();
  setup.staging = buffers.staging();
  return setup;
}

// `first_generation` keys the first call's inputs and guard bytes (measure/check_pattern.h).
CaseOutcome run_case(SuiteContext& ctx, const CaseSpec& spec, cb_mem mem, const std::string& check, int calls,
                     uint32_t first_generation) {
  CaseOutcome o;
  const Execution exec = conformance_execution(ctx, mem);
  int completed = 0;  // calls that ran
  try {
    const MemoryPlan plan = plan_memory(ctx.caps, mem);
    CaseBuffers buffers(ctx.session, ctx.gpu, plan, spec, ctx.rank, ctx.world);
    OpExecutor executor(ctx.session, exec, spec, ctx.rank, buffers.bufs(), executor_setup(ctx, mem, plan, buffers));
    CheckContext cc{spec.op, spec.dtype, spec.redop.value_or(CB_REDOP_SUM), ctx.rank, ctx.world,
                    spec.root, spec.count, {exec.peers[0], exec.peers[1]},
                    spec.placement == Placement::InPlace};
    // A table with `complete` has two paths for a collective: complete (what `run` times on the
    // host clocks) and post + wait (what workloads use). Calls alternate between them, and so do
    // neighbouring sizes of the ladder: a probe's plugin, wrong through post only, passed.
    // Collectives only: the p2p patterns each take one fixed way (OpExecutor).
    const bool two_paths = ctx.session.has_complete() && !op_info(spec.op).point_to_point &&
                           !(ctx.gpu && mem == CB_MEM_CUDA && (ctx.caps.flags & CB_CAP_STREAM_ORDERED));
    for (int call = 0; call < calls; ++call) {  // every call on every rank: they are collective
      cc.generation = first_generation + static_cast<uint32_t>(call);
      const bool through_post = two_paths && (first_generation + static_cast<uint32_t>(call)) % 2 == 1;
      executor.collectives_through_post(through_post);
      buffers.prepare_check(cc);
      executor.run_once(ctx.op_timeout_ms);
      ++completed;
      const CheckResult checked = buffers.check(cc);
      if (o.wrong > 0 || checked.wrong == 0) continue;  // the first wrong call is the one reported
      o.wrong = checked.wrong;
      o.first = checked.first;
      o.wrong_call = call;
      if (two_paths) {
        o.wrong_path = through_post ? "through post and wait" : "through complete";
        o.right_path = through_post ? "through complete" : "through post and wait";
      }
    }
  } catch (const PluginError& e) {
    // A refusal depends only on the arguments: one after the same call ran is a failure.
    o.mine = e.skips_case() && completed == 0 ? CaseOutcome::kRefused : CaseOutcome::kFailed;
    o.error = completed == 0 || !e.skips_case()
                  ? std::string(e.what())
                  : fmt::format("refused on call {} with the arguments of a call that ran (a refusal must depend "
                                "only on the arguments): {}", completed + 1, e.what());
  } catch (const std::exception& e) {
    o.mine = CaseOutcome::kFailed;
    o.error = e.what();
  }
  if (o.mine == CaseOutcome::kFailed)
    ctx.report(check, ConformanceResult::Fail, fmt::format("{}: {}", describe_case(spec, mem), o.error));
  const auto all = ctx.agree(o.mine);
  size_t refused = 0;
  for (int64_t k : all) {
    refused += k == CaseOutcome::kRefused;
    o.failed_anywhere |= k == CaseOutcome::kFailed;
  }
  o.refused_everywhere = refused == all.size();
  o.refusal_split = refused > 0 && refused < all.size();
  return o;
}

// The cases of one op, for the placements, roots, dtypes and reduce ops the plugin advertises.
std::vector<CaseSpec> cases_of(const SuiteContext& ctx, const OpInfo& info) {
  std::vector<CaseSpec> cases;
  const uint64_t dtype_bits = info.reduction ? ctx.caps.reduce_dtypes : ctx.caps.dtypes;
  std::vector<Placement> placements;
  if (info.point_to_point || info.kind == OpKind::Barrier || (ctx.caps.flags & CB_CAP_OUT_OF_PLACE))
    placements.push_back(Placement::OutOfPlace);
  if (!info.point_to_point && info.kind != OpKind::Barrier && (ctx.caps.flags & CB_CAP_IN_PLACE))
    placements.push_back(Placement::InPlace);
  if (info.kind == OpKind::Barrier) {
    cases.push_back(CaseSpec{OpKind::Barrier, 0, 0, CB_DTYPE_UINT8, std::nullopt, Placement::OutOfPlace, 0});
    return cases;
  }
  for (int d = 0; d < CB_DTYPE_COUNT_V1; ++d) {
    if (!(dtype_bits & CB_BIT(d))) continue;
    const auto dtype = static_cast<cb_dtype>(d);
    std::vector<std::optional<cb_redop>> redops{std::nullopt};
    if (info.reduction) {
      redops.clear();
      for (int r = 0; r < CB_REDOP_COUNT_V1; ++r)
        if (ctx.caps.redops & CB_BIT(r)) redops.push_back(static_cast<cb_redop>(r));
    }
    for (const auto& redop : redops)
      for (Placement p : placements)
        for (int root = 0; root < (info.rooted ? ctx.world : 1); ++root)
          for (uint64_t count : kCounts)
            cases.push_back(CaseSpec{info.kind, count * sdk::dtype_size(dtype), count, dtype, redop, p, root});
  }
  return cases;
}

// Counts that cross the sizes where backends change protocol or split a message (eager to
// rendezvous, chunks, pipeline stages): one element below and one above every power of four of
// bytes from 1 KiB up to max_bytes (1, 4, 16, 64, 256 KiB, 1, 4 MiB: odd counts where the power
// holds an even number of elements), and max_bytes itself. A backend right up to 1 MiB and
// wrong past it fails here, not only in a checked benchmark. Powers of four, not two: the
// large sizes are what costs, and every chunk boundary below max_bytes still has a size on
// each side of it.
std::vector<uint64_t> boundary_counts(size_t esize, uint64_t max_bytes) {
  std::vector<uint64_t> out;
  for (uint64_t p = 1024; p <= max_bytes; p *= 4) {
    const uint64_t n = p / esize;
    if (n > 1) out.push_back(n - 1);
    if ((n + 1) * esize <= max_bytes) out.push_back(n + 1);
  }
  const uint64_t top = max_bytes / esize;
  if (top > 0 && (out.empty() || top > out.back())) out.push_back(top);
  return out;
}

// The size ladder of one op: one dtype (uint8 for data movement, so odd byte counts; f32 or
// int32 for reductions), sum, every advertised placement, the last rank as root.
std::vector<CaseSpec> size_cases_of(const SuiteContext& ctx, const OpInfo& info) {
  std::vector<CaseSpec> cases;
  if (info.kind == OpKind::Barrier) return cases;
  const uint64_t dtype_bits = info.reduction ? ctx.caps.reduce_dtypes : ctx.caps.dtypes;
  if (!dtype_bits) return cases;
  const cb_dtype preferred[] = {info.reduction ? CB_DTYPE_F32 : CB_DTYPE_UINT8, CB_DTYPE_INT32};
  cb_dtype dtype = static_cast<cb_dtype>(std::countr_zero(dtype_bits));
  for (cb_dtype d : preferred)
    if (dtype_bits & CB_BIT(d)) {
      dtype = d;
      break;
    }
  std::optional<cb_redop> redop;
  if (info.reduction)
    redop = ctx.caps.redops & CB_BIT(CB_REDOP_SUM) ? CB_REDOP_SUM : static_cast<cb_redop>(std::countr_zero(ctx.caps.redops));
  std::vector<Placement> placements;
  if (info.point_to_point || (ctx.caps.flags & CB_CAP_OUT_OF_PLACE)) placements.push_back(Placement::OutOfPlace);
  if (!info.point_to_point && (ctx.caps.flags & CB_CAP_IN_PLACE)) placements.push_back(Placement::InPlace);
  const size_t esize = sdk::dtype_size(dtype);
  for (Placement p : placements)
    for (uint64_t count : boundary_counts(esize, ctx.max_bytes))
      cases.push_back(CaseSpec{info.kind, count * esize, count, dtype, redop, p, info.rooted ? ctx.world - 1 : 0});
  return cases;
}

// Runs one op's cases; stops the suite (ctx.broken) at the first failure on any rank. Adds the
// cases that ran (were not refused) to `ran`. `ran_elsewhere`: on the op's last memory type, the
// cases it ran on the others; an op that then ran none anywhere fails (nullopt: no such rule).
void check_op(SuiteContext& ctx, const OpInfo& info, cb_mem mem, const std::vector<CaseSpec>& cases,
              const std::string& name, int calls, std::optional<size_t> ran_elsewhere, size_t& ran) {
  if (!ctx.broken.empty()) return ctx.report(name, ConformanceResult::Skip, ctx.broken);
  if (ctx.world < info.min_world_size)
    return ctx.report(name, ConformanceResult::Skip, fmt::format("needs {} ranks", info.min_world_size));
  if (cases.empty())
    return ctx.report(name, ConformanceResult::Skip, fmt::format("no size from 1 KiB to --max-bytes {}", ctx.max_bytes));
  size_t run = 0, refused = 0, wrong_cases = 0, wrong_on_first_call = 0;
  std::string first_wrong;
  bool shown_is_a_first_call = false;
  for (size_t index = 0; index < cases.size(); ++index) {
    const CaseSpec& spec = cases[index];
    const std::string what = describe_case(spec, mem);
    ctx.out.phase("conformance " + what);
    // One call per case (the size ladder): neighbouring sizes alternate generations, so a stray
    // write of one fixed value beside the buffer is not hidden by one guard pattern everywhere.
    const uint32_t first_generation = calls == 1 ? static_cast<uint32_t>(index % 2) : 0;
    const CaseOutcome o = run_case(ctx, spec, mem, name, calls, first_generation);
    if (o.failed_anywhere) {  // this rank's own failure is reported already
      ctx.broken = fmt::format("the communicator failed in {}", what);
      if (o.mine != CaseOutcome::kFailed) ctx.report(name, ConformanceResult::Fail, fmt::format("{}: failed on another rank", what));
      return;
    }
    if (o.refusal_split)
      return ctx.report(name, ConformanceResult::Fail,
                        fmt::format("{}: refused (CB_ERR_UNIMPLEMENTED) on some ranks and run on others: "
                                    "a refusal must depend only on the arguments, the same on every rank", what));
    if (o.refused_everywhere) {
      ++refused;
      continue;
    }
    ++run;
    ++ran;
    if (o.wrong > 0) wrong_on_first_call += o.wrong_call == 0;
    // The case shown: the first wrong one, or the first wrong on its first call once there is
    // one (a sum where prod was asked can be right on call 1 by chance, and a case wrong only on
    // call 2 points at state kept between calls).
    if (o.wrong > 0 && (wrong_cases++ == 0 || (!shown_is_a_first_call && o.wrong_call == 0))) {
      shown_is_a_first_call = o.wrong_call == 0;
      // Where the calls alternate between complete and post + wait, a case wrong on call 2 only
      // is as likely a path that is wrong as state kept between calls: both are said.
      const bool paths = *o.wrong_path != '\0';
      first_wrong = fmt::format(
          "{}{}: {} wrong element(s) on this rank", what,
          o.wrong_call > 0
              ? fmt::format(" (its call {}{}: same arguments and buffers, new input values; the first{} was right)",
                            o.wrong_call + 1, paths ? fmt::format(", {}", o.wrong_path) : std::string(),
                            paths ? fmt::format(", {},", o.right_path) : std::string())
              : paths ? fmt::format(", {}", o.wrong_path) : std::string(),
          o.wrong);
      const std::string outside =
          o.first ? outside_text(checked_buffer_name(o.first->buffer), o.first->index, "the") : std::string();
      if (!outside.empty())
        first_wrong += fmt::format(" (first: it {})", outside);
      else if (o.first)
        first_wrong += fmt::format(" (first at element {}{}: expected {}, got {})", o.first->index,
                                   o.first->buffer == CheckedBuffer::kSend ? " of the send buffer, which must not change" : "",
                                   std::isnan(o.first->expected) ? std::string("untouched") : fmt::format("{}", o.first->expected),
                                   std::isnan(o.first->got) ? std::string("nothing written") : fmt::format("{}", o.first->got));
    }
  }
  if (wrong_cases > 0)
    return ctx.report(name, ConformanceResult::Fail,
                      fmt::format("{} case(s) with wrong results ({} of them on their first call); {}: {}", wrong_cases,
                                  wrong_on_first_call, shown_is_a_first_call ? "the first of those" : "first",
                                  first_wrong));
  // The capabilities must say what post accepts: an op advertised and refused in every case
  // passed (a probe's plugin refused them all), and `run` then measured nothing of it. On every
  // memory type together: the ABI may refuse an op on one of them (UCX collectives on CUDA).
  if (ran_elsewhere && *ran_elsewhere + run == 0 && refused > 0)
    return ctx.report(name, ConformanceResult::Fail,
                      fmt::format("every one of its {} case(s) was refused as unsupported (CB_ERR_UNIMPLEMENTED) on "
                                  "every memory type, though the capabilities advertise {}: leave it out of the "
                                  "capabilities or implement it",
                                  refused, info.name));
  std::string sizes;
  if (!cases.empty() && cases.front().bytes >= 1024 - sdk::dtype_size(cases.front().dtype))
    sizes = fmt::format(", {} to {} bytes", cases.front().bytes, cases.back().bytes);
  ctx.report(name, ConformanceResult::Pass,
             fmt::format("{} case(s) exact{}{}", run, sizes,
                         refused ? fmt::format(", {} refused as unsupported (CB_ERR_UNIMPLEMENTED)", refused) : ""));
}

std::string check_name(const OpInfo& info, cb_mem mem, const char* suffix) {
  return mem == CB_MEM_HOST ? fmt::format("op {}{}", info.name, suffix)
                            : fmt::format("op {}{} ({})", info.name, suffix, sdk::mem_name(mem));
}

// The ops the plugin can run: advertised collectives, p2p patterns where send and recv are.
template <class F>
void for_each_advertised_op(const SuiteContext& ctx, F&& f) {
  for (const OpInfo& info : all_ops()) {
    if (info.kind == OpKind::AllPairs) continue;  // the same send/recv as sendrecv, driven pair by pair
    const bool p2p = info.point_to_point;
    if (p2p ? !(ctx.has_op(CB_OP_SEND) && ctx.has_op(CB_OP_RECV)) : !ctx.has_op(info.abi_op)) continue;
    f(info);
  }
}

}  // namespace

void check_op_matrix(SuiteContext& ctx) {
  const std::vector<cb_mem> mems = ctx.usable_memory();
  if (mems.empty()) {
    ctx.broken = "no memory type this process can drive";
    return ctx.report("memory", ConformanceResult::Skip,
                      ctx.gpu_unusable.empty() ? "the plugin advertises no memory type"
                                               : "device memory only, and no GPU here: " + ctx.gpu_unusable);
  }
  std::map<OpKind, size_t> ran;  // per op, over the memory types so far
  for (cb_mem mem : mems)
    for_each_advertised_op(ctx, [&](const OpInfo& info) {
      const bool last = mem == mems.back();
      const size_t before = ran[info.kind];
      check_op(ctx, info, mem, cases_of(ctx, info), check_name(info, mem, ""), 2,
               last ? std::optional<size_t>(before) : std::nullopt, ran[info.kind]);
    });
}

// The size ladder on the first memory type the plugin drives (device memory for a device-only
// plugin): one dtype, every placement, sizes across the protocol and chunk boundaries.
void check_op_sizes(SuiteContext& ctx) {
  const std::vector<cb_mem> mems = ctx.usable_memory();
  if (mems.empty()) return;  // check_op_matrix said why
  for_each_advertised_op(ctx, [&](const OpInfo& info) {
    if (info.kind == OpKind::Barrier) return;
    size_t ran = 0;  // the matrix judged refusals over every memory type
    check_op(ctx, info, mems.front(), size_cases_of(ctx, info), check_name(info, mems.front(), " sizes"), 1,
             std::nullopt, ran);
  });
}

// A leak per call: the first op's first size-ladder case, kLeakWarmCalls calls, then two blocks
// of kLeakCalls. A probe's plugin leaked 1 MiB per call and passed every other check, the
// create/destroy cycles included. Resident (and device) memory moves in pages and steps, so it
// must only not grow by kLeakLimit over both blocks (8 KiB a call); the C library's heap is
// byte-exact and must not grow by more than kHeapBytesPerCall a call in *each* block (a growth in
// one block only is a cache or pool filling once, not a leak): 32 B a call, where RSS alone
// needed 32 KiB.
void check_op_leaks(SuiteContext& ctx) {
  constexpr int kLeakWarmCalls = 50, kLeakCalls = 1000;
  constexpr uint64_t kLeakLimit = 16u << 20, kHeapBytesPerCall = 32;
  const char* name = "repeated op without leaks";
  if (!ctx.broken.empty()) return ctx.report(name, ConformanceResult::Skip, ctx.broken);
  const std::vector<cb_mem> mems = ctx.usable_memory();
  std::optional<CaseSpec> spec;
  if (!mems.empty())
    for_each_advertised_op(ctx, [&](const OpInfo& info) {
      if (spec || ctx.world < info.min_world_size) return;
      if (auto cases = size_cases_of(ctx, info); !cases.empty()) spec = cases.front();
    });
  if (!spec) return ctx.report(name, ConformanceResult::Skip, "no op with data to repeat");
  const std::string what = describe_case(*spec, mems.front());
  ctx.out.phase(fmt::format("conformance {}, {} times", what, kLeakWarmCalls + 2 * kLeakCalls));
  uint64_t rss0 = 0, rss1 = 0;
  int64_t heap_grew[2] = {0, 0};
  int64_t dev_lost = 0;
  try {
    const Execution exec = conformance_execution(ctx, mems.front());
    const MemoryPlan plan = plan_memory(ctx.caps, mems.front());
    CaseBuffers buffers(ctx.session, ctx.gpu, plan, *spec, ctx.rank, ctx.world);
    OpExecutor executor(ctx.session, exec, *spec, ctx.rank, buffers.bufs(),
                        executor_setup(ctx, mems.front(), plan, buffers));
    for (int i = 0; i < kLeakWarmCalls; ++i) executor.run_once(ctx.op_timeout_ms);
    rss0 = resident_bytes();
    const int64_t dev0 = ctx.gpu ? static_cast<int64_t>(ctx.gpu->free_bytes()) : 0;
    for (int64_t& grew : heap_grew) {
      const auto heap0 = static_cast<int64_t>(heap_in_use_bytes());
      for (int i = 0; i < kLeakCalls; ++i) executor.run_once(ctx.op_timeout_ms);
      grew = static_cast<int64_t>(heap_in_use_bytes()) - heap0;
    }
    rss1 = resident_bytes();
    dev_lost = ctx.gpu ? dev0 - static_cast<int64_t>(ctx.gpu->free_bytes()) : 0;
  } catch (const PluginError& e) {
    if (e.skips_case()) return ctx.report(name, ConformanceResult::Skip, fmt::format("{}: refused: {}", what, e.what()));
    ctx.broken = fmt::format("the communicator failed in {}", what);
    return ctx.report(name, ConformanceResult::Fail, fmt::format("{}: {}", what, e.what()));
  } catch (const std::exception& e) {
    ctx.broken = fmt::format("the communicator failed in {}", what);
    return ctx.report(name, ConformanceResult::Fail, fmt::format("{}: {}", what, e.what()));
  }
  const double grew_mib = (static_cast<double>(rss1) - static_cast<double>(rss0)) / 1048576.0;
  if (rss1 > rss0 + kLeakLimit)
    return ctx.report(name, ConformanceResult::Fail,
                      fmt::format("{}: resident memory grew by {:.1f} MiB over {} calls ({:.1f} KiB per call)", what,
                                  grew_mib, 2 * kLeakCalls, grew_mib * 1024 / (2 * kLeakCalls)));
  if (dev_lost > static_cast<int64_t>(kLeakLimit))
    return ctx.report(name, ConformanceResult::Fail,
                      fmt::format("{}: free device memory shrank by {:.1f} MiB over {} calls", what,
                                  static_cast<double>(dev_lost) / 1048576.0, 2 * kLeakCalls));
  const int64_t heap_least = std::min(heap_grew[0], heap_grew[1]);
  if (heap_least > static_cast<int64_t>(kHeapBytesPerCall) * kLeakCalls)
    return ctx.report(name, ConformanceResult::Fail,
                      fmt::format("{}: the C library's heap grew in each of two blocks of {} calls ({:+} and {:+} "
                                  "bytes: {} bytes or more per call, never freed)",
                                  what, kLeakCalls, heap_grew[0], heap_grew[1], heap_least / kLeakCalls));
  ctx.report(name, ConformanceResult::Pass,
             fmt::format("{}: {} calls, {:+.1f} MiB resident, heap {:+} and {:+} bytes", what, 2 * kLeakCalls, grew_mib,
                         heap_grew[0], heap_grew[1]));
}

void check_concurrent_collectives(SuiteContext& ctx) {
  const char* name = "collectives in flight together";
  if (!ctx.broken.empty()) return ctx.report(name, ConformanceResult::Skip, ctx.broken);
  if (!(ctx.caps.flags & CB_CAP_ASYNC))
    return ctx.report(name, ConformanceResult::Skip, "not claimed: no CB_CAP_ASYNC");
  const OpInfo* op = nullptr;
  for (OpKind k : {OpKind::Allreduce, OpKind::Allgather, OpKind::Alltoall, OpKind::Broadcast})
    if (ctx.has_op(op_info(k).abi_op)) { op = &op_info(k); break; }
  if (!op) return ctx.report(name, ConformanceResult::Skip, "no allreduce, allgather, alltoall or broadcast");
  const uint64_t dtype_bits = op->reduction ? ctx.caps.reduce_dtypes : ctx.caps.dtypes;
  const cb_dtype dtype = dtype_bits & CB_BIT(CB_DTYPE_INT32) ? CB_DTYPE_INT32 : static_cast<cb_dtype>(std::countr_zero(dtype_bits));
  const cb_mem mem = ctx.usable_memory().front();
  const Placement placement = ctx.caps.flags & CB_CAP_OUT_OF_PLACE ? Placement::OutOfPlace : Placement::InPlace;
  constexpr int kInFlight = 4;
  std::string problem;
  try {
    const MemoryPlan plan = plan_memory(ctx.caps, mem);
    std::vector<std::unique_ptr<CaseBuffers>> bufs;
    std::vector<CheckContext> checks;
    std::vector<cb_request*> reqs;
    std::vector<CaseSpec> specs;
    for (int i = 0; i < kInFlight; ++i)
      specs.push_back(CaseSpec{op->kind, 0, 1001u + 2u * static_cast<unsigned>(i), dtype, op->reduction ? std::optional(CB_REDOP_SUM) : std::nullopt, placement, 0});
    for (int i = 0; i < kInFlight; ++i) {
      specs[i].bytes = specs[i].count * sdk::dtype_size(dtype);
      bufs.push_back(std::make_unique<CaseBuffers>(ctx.session, ctx.gpu, plan, specs[i], ctx.rank, ctx.world));
      checks.push_back(CheckContext{op->kind, dtype, CB_REDOP_SUM, ctx.rank, ctx.world, 0, specs[i].count, {0, 1},
                                    placement == Placement::InPlace});
      bufs[i]->prepare_check(checks[i]);
    }
    ctx.out.phase(fmt::format("conformance: {} {}s posted before any is waited for", kInFlight, op->name));
    for (int i = 0; i < kInFlight; ++i) {
      cb_op_args a = base_args(ctx, op->abi_op, bufs[i]->bufs().send, bufs[i]->bufs().recv, specs[i].count, dtype, plan.op_memory);
      reqs.push_back(ctx.session.post(a));
    }
    for (int i = kInFlight - 1; i >= 0; --i) {  // last first: waiting on it must progress the rest
      ctx.session.wait(reqs[static_cast<size_t>(i)], ctx.op_timeout_ms);
      ctx.session.release(reqs[static_cast<size_t>(i)]);
      reqs[static_cast<size_t>(i)] = nullptr;
    }
    for (int i = 0; i < kInFlight; ++i)
      if (const int64_t w = bufs[i]->check(checks[i]).wrong; w > 0 && problem.empty())
        problem = fmt::format("{} #{} of {} in flight: {} wrong elements", op->name, i + 1, kInFlight, w);
  } catch (const std::exception& e) {
    problem = e.what();
    ctx.broken = fmt::format("the communicator failed with {} collectives in flight", kInFlight);
  }
  const auto all = ctx.agree(problem.empty() ? 0 : 1);
  (void)all;
  if (!problem.empty()) return ctx.report(name, ConformanceResult::Fail, problem);
  ctx.report(name, ConformanceResult::Pass,
             fmt::format("{} {}s posted back to back, waited for last first, all exact", kInFlight, op->name));
}

}  // namespace commbench
