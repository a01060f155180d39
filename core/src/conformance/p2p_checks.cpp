// What docs/plugin-abi.md §4 ("Point-to-point semantics") promises about send and recv beyond
// the patterns: a rank may send to itself, and a send or receive left pending while the rank
// posts a collective neither blocks the collective nor is lost by it.
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "conformance/suite_context.h"
#include "plugin/plugin_error.h"

namespace commbench {
namespace {

constexpr uint32_t kTagA = 0x5e1f, kTagB = 0x5e20;

// Distinct bytes per (sender, tag, index): a message delivered to the wrong receive, or a
// truncated one, does not match by accident.
uint8_t pattern(int sender, uint32_t tag, size_t i) {
  return static_cast<uint8_t>((i * 131u + static_cast<size_t>(sender) * 17u + tag) % 251u);
}

// Host-visible bytes for a p2p check: the suite reads them back itself, so only host memory.
struct HostBytes {
  HostBytes(SuiteContext& ctx, size_t n) : mem(ctx, CB_MEM_HOST, n), size(n) {}
  uint8_t* data() const { return static_cast<uint8_t*>(mem.get()); }
  void fill(int sender, uint32_t tag) const {
    for (size_t i = 0; i < size; ++i) data()[i] = pattern(sender, tag, i);
  }
  void poison() const {
    for (size_t i = 0; i < size; ++i) data()[i] = 0xEE;
  }
  // The first index that does not hold sender's pattern, or -1.
  int64_t first_wrong(int sender, uint32_t tag) const {
    for (size_t i = 0; i < size; ++i)
      if (data()[i] != pattern(sender, tag, i)) return static_cast<int64_t>(i);
    return -1;
  }
  ScratchMemory mem;
  size_t size;
};

cb_op_args p2p_args(const SuiteContext& ctx, cb_op op, const HostBytes& buf, int peer, uint32_t tag) {
  cb_op_args a = base_args(ctx, op, op == CB_OP_SEND ? buf.data() : nullptr, op == CB_OP_RECV ? buf.data() : nullptr,
                           buf.size, CB_DTYPE_UINT8, CB_MEM_HOST);
  a.peer = peer;
  a.tag = tag;
  return a;
}

bool p2p_on_host(const SuiteContext& ctx) {
  return ctx.has_op(CB_OP_SEND) && ctx.has_op(CB_OP_RECV) && (ctx.caps.dtypes & CB_BIT(CB_DTYPE_UINT8)) &&
         (ctx.caps.mem_types & CB_BIT(CB_MEM_HOST));
}

// Waits for and releases every request, even after a failure (the first error is rethrown).
void wait_all(SuiteContext& ctx, std::vector<cb_request*>& reqs) {
  std::exception_ptr first;
  for (cb_request*& r : reqs) {
    if (!r) continue;
    try {
      ctx.session.wait(r, ctx.op_timeout_ms);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
    ctx.session.release(r);
    r = nullptr;
  }
  if (first) std::rethrow_exception(first);
}

}  // namespace

// A send to one's own rank and the matching receive, both posted before either is waited for:
// the data arrives (small, and past any eager limit); or both posts are refused with
// CB_ERR_UNIMPLEMENTED. Never a hang, never another error.
void check_self_send_recv(SuiteContext& ctx) {
  const char* name = "self send/recv";
  if (!ctx.broken.empty()) return ctx.report(name, ConformanceResult::Skip, ctx.broken);
  if (!p2p_on_host(ctx)) return ctx.report(name, ConformanceResult::Skip, "no send/recv of uint8 on host memory");
  std::string problem, refused;
  size_t delivered = 0;
  const size_t large = static_cast<size_t>(std::min<uint64_t>(ctx.max_bytes, (1u << 20) + 1));
  for (size_t bytes : {size_t{1001}, large}) {
    ctx.out.phase(fmt::format("conformance {}: {} bytes to rank {} itself", name, bytes, ctx.rank));
    std::vector<cb_request*> reqs;
    try {
      HostBytes in(ctx, bytes), out(ctx, bytes);
      out.fill(ctx.rank, kTagA);
      in.poison();
      // Receive first, as a ring posts it: a plugin must not match a message only to a
      // receive posted after it.
      try {
        reqs.push_back(ctx.session.post(p2p_args(ctx, CB_OP_RECV, in, ctx.rank, kTagA)));
      } catch (const PluginError& e) {  // refused at post: nothing is pending, the suite goes on
        if (e.status() == CB_ERR_UNIMPLEMENTED) refused = e.what();
        else
          problem = fmt::format("{} bytes: a receive from itself was refused with {} (self send/recv is valid: "
                                "deliver it, or refuse with CB_ERR_UNIMPLEMENTED): {}",
                                bytes, status_name(e.status()), e.what());
        break;
      }
      try {
        reqs.push_back(ctx.session.post(p2p_args(ctx, CB_OP_SEND, out, ctx.rank, kTagA)));
      } catch (const std::exception& e) {
        // The receive can never complete now; it stays with the plugin until the abort check.
        problem = fmt::format("{} bytes: the receive from itself was accepted but the send to itself failed: {}",
                              bytes, e.what());
        ctx.broken = "a receive from itself is left pending";
        break;
      }
      wait_all(ctx, reqs);
      if (const int64_t i = in.first_wrong(ctx.rank, kTagA); i >= 0)
        problem = fmt::format("{} bytes to itself: byte {} is wrong (expected {}, got {})", bytes, i,
                              pattern(ctx.rank, kTagA, static_cast<size_t>(i)), in.data()[i]);
      else
        ++delivered;
    } catch (const std::exception& e) {
      problem = fmt::format("{} bytes to itself: {}", bytes, e.what());
      ctx.broken = "the communicator failed in a send to itself";
    }
    if (!problem.empty()) break;
  }
  ctx.agree(problem.empty() ? 0 : 1);
  if (!problem.empty()) return ctx.report(name, ConformanceResult::Fail, problem);
  if (delivered > 0 && !refused.empty())
    return ctx.report(name, ConformanceResult::Fail,
                      "delivered 1001 bytes to itself but refused the larger message: a refusal must not depend on the "
                      "size (" + refused + ")");
  if (delivered == 0 && !refused.empty())
    return ctx.report(name, ConformanceResult::Pass, "refused with CB_ERR_UNIMPLEMENTED: " + refused);
  ctx.report(name, ConformanceResult::Pass,
             fmt::format("1001 and {} bytes, receive posted first, delivered exactly", large));
}

// Rank 0 posts a receive from rank 1 and rank 1 a send to rank 0, with different tags, and
// neither is matched yet; every rank then runs a collective to completion; then the matching
// send and receive are posted and all four complete with their data. Backends whose ops run in
// posting order on a stream (CB_CAP_STREAM_ORDERED) are exempt: the ABI leaves that order to
// them and the core never posts so.
void check_p2p_pending_across_collective(SuiteContext& ctx) {
  const char* name = "p2p pending across a collective";
  if (!ctx.broken.empty()) return ctx.report(name, ConformanceResult::Skip, ctx.broken);
  if (ctx.world < 2) return ctx.report(name, ConformanceResult::Skip, "needs 2 ranks");
  if (!p2p_on_host(ctx)) return ctx.report(name, ConformanceResult::Skip, "no send/recv of uint8 on host memory");
  if (ctx.caps.flags & CB_CAP_STREAM_ORDERED)
    return ctx.report(name, ConformanceResult::Skip, "stream-ordered: ops run in posting order (docs/plugin-abi.md §4)");
  const bool allreduce = ctx.has_op(CB_OP_ALLREDUCE) && (ctx.caps.reduce_dtypes & CB_BIT(CB_DTYPE_INT32)) &&
                         (ctx.caps.redops & CB_BIT(CB_REDOP_SUM)) && (ctx.caps.flags & CB_CAP_OUT_OF_PLACE);
  if (!allreduce && !ctx.has_op(CB_OP_BARRIER))
    return ctx.report(name, ConformanceResult::Skip, "no int32 sum allreduce (out of place) or barrier to post");
  const size_t bytes = static_cast<size_t>(std::min<uint64_t>(ctx.max_bytes, (1u << 20) + 1));
  std::string problem;
  std::vector<cb_request*> early, late;
  try {
    HostBytes a(ctx, bytes), b(ctx, bytes);  // rank 0: receives into both; rank 1: sends both
    if (ctx.rank == 1) {
      a.fill(1, kTagA);
      b.fill(1, kTagB);
    } else {
      a.poison();
      b.poison();
    }
    ctx.out.phase(fmt::format("conformance {}: p2p posted, not matched", name));
    if (ctx.rank == 0) early.push_back(ctx.session.post(p2p_args(ctx, CB_OP_RECV, a, 1, kTagA)));
    if (ctx.rank == 1) early.push_back(ctx.session.post(p2p_args(ctx, CB_OP_SEND, b, 0, kTagB)));
    ctx.out.phase(fmt::format("conformance {}: {} with the p2p pending", name, allreduce ? "allreduce" : "barrier"));
    ScratchMemory send(ctx, CB_MEM_HOST, 1001 * 4), recv(ctx, CB_MEM_HOST, 1001 * 4);
    auto* s = static_cast<int32_t*>(send.get());
    for (int i = 0; i < 1001; ++i) s[i] = ctx.rank + 1;
    cb_op_args c = base_args(ctx, allreduce ? CB_OP_ALLREDUCE : CB_OP_BARRIER, allreduce ? send.get() : nullptr,
                             allreduce ? recv.get() : nullptr, allreduce ? 1001 : 0, CB_DTYPE_INT32, CB_MEM_HOST);
    ctx.session.complete(c, ctx.op_timeout_ms);
    if (allreduce) {
      const int32_t want = ctx.world * (ctx.world + 1) / 2;
      const auto* r = static_cast<const int32_t*>(recv.get());
      for (int i = 0; i < 1001 && problem.empty(); ++i)
        if (r[i] != want)
          problem = fmt::format("the allreduce posted while p2p was pending is wrong: element {} is {}, expected {}", i,
                                r[i], want);
    }
    ctx.out.phase(fmt::format("conformance {}: matching p2p posted after the collective", name));
    if (ctx.rank == 0) late.push_back(ctx.session.post(p2p_args(ctx, CB_OP_RECV, b, 1, kTagB)));
    if (ctx.rank == 1) late.push_back(ctx.session.post(p2p_args(ctx, CB_OP_SEND, a, 0, kTagA)));
    wait_all(ctx, late);
    wait_all(ctx, early);
    if (ctx.rank == 0 && problem.empty()) {
      if (const int64_t i = a.first_wrong(1, kTagA); i >= 0)
        problem = fmt::format("the receive posted before the collective got byte {} wrong", i);
      else if (const int64_t j = b.first_wrong(1, kTagB); j >= 0)
        problem = fmt::format("the send posted before the collective delivered byte {} wrong", j);
    }
  } catch (const std::exception& e) {
    try {
      wait_all(ctx, late);
      wait_all(ctx, early);
    } catch (const std::exception&) {
    }
    problem = e.what();
    ctx.broken = "the communicator failed with p2p pending across a collective";
  }
  ctx.agree(problem.empty() ? 0 : 1);
  if (!problem.empty()) return ctx.report(name, ConformanceResult::Fail, problem);
  ctx.report(name, ConformanceResult::Pass,
             fmt::format("a {}-byte receive and send left pending through {}, then matched: both exact", bytes,
                         allreduce ? "an allreduce (exact)" : "a barrier"));
}

}  // namespace commbench
