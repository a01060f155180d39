// What a plugin must refuse, and with which status: capabilities it does not advertise
// (CB_ERR_UNIMPLEMENTED, so the core records the case as unsupported and goes on) and arguments
// no caller should pass (CB_ERR_INVALID_ARGUMENT). Every rank posts the same thing, so a plugin
// that wrongly accepts one still completes it and the suite goes on.
#include <bit>
#include <exception>
#include <functional>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "conformance/suite_context.h"
#include "plugin/plugin_error.h"

namespace commbench {
namespace {

constexpr size_t kScratchBytes = 1 << 16;
constexpr size_t kCount = 4;  // elements: fits kScratchBytes for every op and world size

// The first op of `candidates` the plugin advertises, or nullopt.
std::optional<cb_op> first_op(const SuiteContext& ctx, std::initializer_list<cb_op> candidates) {
  for (cb_op op : candidates)
    if (ctx.has_op(op)) return op;
  return std::nullopt;
}

// First bit of `universe` that is not in `bits`, or nullopt.
std::optional<int> first_missing(uint64_t bits, int universe) {
  for (int i = 0; i < universe; ++i)
    if (!(bits & CB_BIT(i))) return i;
  return std::nullopt;
}

struct Probe {
  std::string what;
  cb_op_args args;
};

// Posts `args`; when the plugin accepts, the op is completed (every rank posted it). Returns the
// status post answered with. Sets ctx.broken if an accepted op then fails.
cb_status post_expecting_refusal(SuiteContext& ctx, const cb_op_args& args, std::string* message) {
  cb_request* req = nullptr;
  CallResult r = call(ctx.api(), ctx.api().post(ctx.session.comm(), &args, &req));
  *message = r.message;
  if (r.code == CB_OK && req != nullptr) {
    const CallResult w = call(ctx.api(), ctx.api().wait(req, ctx.op_timeout_ms));
    ctx.api().request_free(req);
    if (w.code != CB_OK) ctx.broken = "an op the plugin should have refused then failed: " + w.message;
  }
  return r.code;
}

// Runs each probe on every rank and checks the status post answered with.
void expect_statuses(SuiteContext& ctx, const char* check, const std::vector<Probe>& probes,
                     std::initializer_list<cb_status> accepted, const std::string& none_reason) {
  if (!ctx.broken.empty()) return ctx.report(check, ConformanceResult::Skip, ctx.broken);
  if (probes.empty()) return ctx.report(check, ConformanceResult::Skip, none_reason);
  std::vector<std::string> wrong;
  for (const Probe& p : probes) {
    ctx.out.phase(fmt::format("conformance {}: {}", check, p.what));
    std::string message;
    const cb_status got = post_expecting_refusal(ctx, p.args, &message);
    bool ok = false;
    for (cb_status s : accepted) ok |= got == s;
    if (!ok)
      wrong.push_back(got == CB_OK ? fmt::format("{}: accepted", p.what)
                                   : fmt::format("{}: {} ({})", p.what, status_name(got), message));
    if (!ctx.broken.empty()) break;
  }
  ctx.agree(0);  // in step again before the next check
  std::string expected;
  for (cb_status s : accepted) expected += (expected.empty() ? "" : " or ") + status_name(s);
  if (!wrong.empty())
    return ctx.report(check, ConformanceResult::Fail,
                      fmt::format("expected {}; {}{}", expected, wrong.front(),
                                  wrong.size() > 1 ? fmt::format(" (and {} more)", wrong.size() - 1) : ""));
  ctx.report(check, ConformanceResult::Pass, fmt::format("{} case(s) answered {}", probes.size(), expected));
}

}  // namespace

void check_unadvertised_refused(SuiteContext& ctx) {
  const char* check = "unadvertised capabilities refused";
  if (!ctx.broken.empty()) return ctx.report(check, ConformanceResult::Skip, ctx.broken);
  const cb_mem mem = ctx.usable_memory().front();
  ScratchMemory send(ctx, mem, kScratchBytes), recv(ctx, mem, kScratchBytes);
  const cb_dtype any_dtype = ctx.caps.dtypes ? static_cast<cb_dtype>(std::countr_zero(ctx.caps.dtypes)) : CB_DTYPE_F32;
  auto args = [&](cb_op op, cb_dtype dtype) {
    cb_op_args a = base_args(ctx, op, send.get(), recv.get(), kCount, dtype, send.mem());
    if (op == CB_OP_SEND || op == CB_OP_RECV) a.peer = (ctx.rank + 1) % ctx.world;
    return a;
  };
  std::vector<Probe> probes;
  for (int o = 0; o < CB_OP_COUNT_V1; ++o)
    if (!ctx.has_op(static_cast<cb_op>(o)))
      probes.push_back({fmt::format("op {} (not advertised)", o), args(static_cast<cb_op>(o), any_dtype)});
  probes.push_back({"op 63 (from a newer host)", args(static_cast<cb_op>(63), any_dtype)});
  if (auto op = first_op(ctx, {CB_OP_ALLREDUCE, CB_OP_REDUCESCATTER, CB_OP_REDUCE})) {
    const cb_dtype rd = ctx.caps.reduce_dtypes ? static_cast<cb_dtype>(std::countr_zero(ctx.caps.reduce_dtypes)) : CB_DTYPE_F32;
    if (auto d = first_missing(ctx.caps.reduce_dtypes, CB_DTYPE_COUNT_V1))
      probes.push_back({fmt::format("reduction dtype {}", sdk::dtype_name(static_cast<cb_dtype>(*d))), args(*op, static_cast<cb_dtype>(*d))});
    if (auto r = first_missing(ctx.caps.redops, CB_REDOP_COUNT_V1)) {
      cb_op_args a = args(*op, rd);
      a.redop = static_cast<cb_redop>(*r);
      probes.push_back({fmt::format("redop {}", sdk::redop_name(a.redop)), a});
    }
    cb_op_args a = args(*op, rd);
    a.redop = static_cast<cb_redop>(42);
    probes.push_back({"redop 42 (from a newer host)", a});
  }
  if (auto op = first_op(ctx, {CB_OP_ALLGATHER, CB_OP_BROADCAST, CB_OP_ALLTOALL, CB_OP_GATHER, CB_OP_SCATTER})) {
    if (auto d = first_missing(ctx.caps.dtypes, CB_DTYPE_COUNT_V1))
      probes.push_back({fmt::format("dtype {}", sdk::dtype_name(static_cast<cb_dtype>(*d))), args(*op, static_cast<cb_dtype>(*d))});
    probes.push_back({"dtype 99 (from a newer host)", args(*op, static_cast<cb_dtype>(99))});
  }
  if (auto op = first_op(ctx, {CB_OP_ALLREDUCE, CB_OP_BROADCAST, CB_OP_ALLTOALL})) {
    const cb_dtype d = *op == CB_OP_ALLREDUCE && ctx.caps.reduce_dtypes
                           ? static_cast<cb_dtype>(std::countr_zero(ctx.caps.reduce_dtypes)) : any_dtype;
    if (!(ctx.caps.flags & CB_CAP_IN_PLACE)) {
      cb_op_args a = args(*op, d);
      a.sendbuf = a.recvbuf;
      probes.push_back({"in place (no CB_CAP_IN_PLACE)", a});
    }
    if (!(ctx.caps.flags & CB_CAP_OUT_OF_PLACE))
      probes.push_back({"out of place (no CB_CAP_OUT_OF_PLACE)", args(*op, d)});
    for (int m = 0; m < CB_MEM_COUNT_V1; ++m)
      if (!(ctx.caps.mem_types & CB_BIT(m))) {
        cb_op_args a = args(*op, d);
        a.mem_type = static_cast<cb_mem>(m);
        probes.push_back({fmt::format("memory {}", sdk::mem_name(a.mem_type)), a});
      }
  }
  expect_statuses(ctx, check, probes, {CB_ERR_UNIMPLEMENTED}, "the plugin advertises everything");
}

void check_bad_arguments(SuiteContext& ctx) {
  const char* check = "bad arguments refused";
  if (!ctx.broken.empty()) return ctx.report(check, ConformanceResult::Skip, ctx.broken);
  const cb_mem mem = ctx.usable_memory().front();
  ScratchMemory send(ctx, mem, kScratchBytes), recv(ctx, mem, kScratchBytes);
  std::vector<Probe> probes;
  const auto op = first_op(ctx, {CB_OP_ALLREDUCE, CB_OP_ALLGATHER, CB_OP_BROADCAST, CB_OP_ALLTOALL,
                                 CB_OP_REDUCESCATTER, CB_OP_REDUCE, CB_OP_GATHER, CB_OP_SCATTER});
  auto dtype_for = [&](cb_op o) {
    const bool red = o == CB_OP_ALLREDUCE || o == CB_OP_REDUCESCATTER || o == CB_OP_REDUCE;
    const uint64_t bits = red ? ctx.caps.reduce_dtypes : ctx.caps.dtypes;
    return bits ? static_cast<cb_dtype>(std::countr_zero(bits)) : CB_DTYPE_F32;
  };
  if (op) {
    cb_op_args a = base_args(ctx, *op, send.get(), recv.get(), kCount, dtype_for(*op), send.mem());
    if (!(ctx.caps.flags & CB_CAP_OUT_OF_PLACE)) a.sendbuf = a.recvbuf;
    cb_op_args small = a;
    small.struct_size = CB_STRUCT_SIZE(cb_op_args, count);  // no dtype, redop, root...: too old to be read
    probes.push_back({"struct_size too small for the fields the op needs", small});
    cb_op_args null_buffers = a;
    null_buffers.sendbuf = nullptr;
    null_buffers.recvbuf = nullptr;
    probes.push_back({"NULL buffers with count > 0", null_buffers});
  }
  if (auto rooted = first_op(ctx, {CB_OP_BROADCAST, CB_OP_REDUCE, CB_OP_GATHER, CB_OP_SCATTER})) {
    cb_op_args a = base_args(ctx, *rooted, send.get(), recv.get(), kCount, dtype_for(*rooted), send.mem());
    if (!(ctx.caps.flags & CB_CAP_OUT_OF_PLACE)) a.sendbuf = a.recvbuf;
    a.root = ctx.world;
    probes.push_back({fmt::format("root {} of {} ranks", a.root, ctx.world), a});
    a.root = -1;
    probes.push_back({"root -1", a});
  }
  if (ctx.has_op(CB_OP_SEND)) {
    cb_op_args a = base_args(ctx, CB_OP_SEND, send.get(), recv.get(), kCount, dtype_for(CB_OP_SEND), send.mem());
    a.peer = ctx.world;
    probes.push_back({fmt::format("send to peer {} of {} ranks", a.peer, ctx.world), a});
  }
  expect_statuses(ctx, check, probes, {CB_ERR_INVALID_ARGUMENT}, "no op to probe");

  // NULL pointers where the ABI requires one: answered without touching anything.
  const char* nulls = "NULL arguments refused";
  if (!ctx.broken.empty()) return ctx.report(nulls, ConformanceResult::Skip, ctx.broken);
  std::vector<std::string> wrong;
  auto expect_invalid = [&](const char* what, const std::function<cb_error*()>& f) {
    ctx.out.phase(fmt::format("conformance {}: {}", nulls, what));
    const CallResult r = call(ctx.api(), f());
    if (r.code != CB_ERR_INVALID_ARGUMENT)
      wrong.push_back(fmt::format("{}: {}", what, r.code == CB_OK ? "accepted" : status_name(r.code) + " (" + r.message + ")"));
  };
  const cb_backend_api& api = ctx.api();
  cb_op_args good = base_args(ctx, op.value_or(CB_OP_BARRIER), send.get(), recv.get(), kCount,
                              dtype_for(op.value_or(CB_OP_BARRIER)), send.mem());
  if (!(ctx.caps.flags & CB_CAP_OUT_OF_PLACE)) good.sendbuf = good.recvbuf;
  expect_invalid("post(comm, NULL args, &request)", [&] { cb_request* r = nullptr; return api.post(ctx.session.comm(), nullptr, &r); });
  expect_invalid("post(comm, &args, NULL)", [&] { return api.post(ctx.session.comm(), &good, nullptr); });
  expect_invalid("post(NULL comm, &args, &request)", [&] { cb_request* r = nullptr; return api.post(nullptr, &good, &r); });
  expect_invalid("get_capabilities(backend, NULL)", [&] { return api.get_capabilities(ctx.session.backend(), nullptr); });
  expect_invalid("test(NULL request, &done)", [&] { int32_t done = 0; return api.test(nullptr, &done); });
  expect_invalid("wait(NULL request)", [&] { return api.wait(nullptr, 0); });
  expect_invalid("comm_create(backend, timeout, NULL)", [&] { return api.comm_create(ctx.session.backend(), 1000, nullptr); });
  ctx.agree(0);
  if (!wrong.empty())
    return ctx.report(nulls, ConformanceResult::Fail,
                      fmt::format("expected invalid_argument; {}{}", wrong.front(),
                                  wrong.size() > 1 ? fmt::format(" (and {} more)", wrong.size() - 1) : ""));
  ctx.report(nulls, ConformanceResult::Pass, "7 calls answered invalid_argument");
}

}  // namespace commbench
