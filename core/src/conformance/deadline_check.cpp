// The "deadline" stage of `commbench conformance` (2 ranks, processes of their own): a blocking
// op whose peer never posts must not block for ever. docs/plugin-abi.md §4 ("Deadlines"): a
// collective that a backend completes inside `post` is bounded by its own per-op limit, never
// longer than the `timeout_ms` given to `comm_create`; `wait` bounds itself. So with a
// communicator created with a short timeout, rank 0 posts an allreduce (or barrier) that no other
// rank joins, and the post and wait must end with CB_ERR_TIMEOUT (or CB_ERR_REMOTE) within that
// timeout, plus slack for a loaded machine. The communicator is aborted afterwards, never reused.
#include <chrono>
#include <exception>

#include <fmt/format.h>

#include "conformance/rank_suite.h"
#include "conformance/suite_context.h"
#include "plugin/host_services.h"
#include "plugin/plugin_error.h"

namespace commbench {
namespace {

constexpr int32_t kCreateTimeoutMs = 5000;  // the communicator's limit the op must respect
constexpr double kSlackS = 10;              // a loaded machine's scheduling, on top of it

}  // namespace

int run_deadline_check(const LoadedPlugin& plugin, Bootstrap& for_plugin, Bootstrap& for_suite, ResultChannel& out,
                       const RankSuiteOptions& opts) {
  const char* name = "blocking op bounded by comm_create's timeout";
  HostServices host(for_plugin, opts.rank, opts.world, opts.options);
  BackendSession session(plugin.api);
  SuiteContext ctx{session, for_suite, out, opts.rank, opts.world, opts.op_timeout_ms};
  try {
    out.phase("conformance deadline: init");
    session.init(host.get());
    ctx.caps = session.capabilities();
    if (!(ctx.caps.mem_types & CB_BIT(CB_MEM_HOST))) {
      ctx.report(name, ConformanceResult::Skip, "no host memory (the probe posts host buffers)");
      return 0;
    }
    const bool allreduce = ctx.has_op(CB_OP_ALLREDUCE) && (ctx.caps.reduce_dtypes & CB_BIT(CB_DTYPE_INT32)) &&
                           (ctx.caps.redops & CB_BIT(CB_REDOP_SUM)) && (ctx.caps.flags & CB_CAP_OUT_OF_PLACE);
    if (!allreduce && !ctx.has_op(CB_OP_BARRIER)) {
      ctx.report(name, ConformanceResult::Skip, "no int32 sum allreduce or barrier to post");
      return 0;
    }
    out.phase(fmt::format("conformance deadline: comm_create({} ms)", kCreateTimeoutMs));
    session.create_comm(kCreateTimeoutMs);
    // Rank 0's op must not wait for the suite: the others hold back until it has finished.
    std::string problem;
    if (opts.rank == 0) {
      out.phase(fmt::format("conformance deadline: {} that no other rank joins", allreduce ? "allreduce" : "barrier"));
      ScratchMemory send(ctx, CB_MEM_HOST, 1001 * 4), recv(ctx, CB_MEM_HOST, 1001 * 4);
      const cb_op_args a = base_args(ctx, allreduce ? CB_OP_ALLREDUCE : CB_OP_BARRIER, allreduce ? send.get() : nullptr,
                                     allreduce ? recv.get() : nullptr, allreduce ? 1001 : 0, CB_DTYPE_INT32, CB_MEM_HOST);
      const auto t0 = std::chrono::steady_clock::now();
      cb_status got = CB_OK;
      std::string message;
      try {
        session.complete(a, kCreateTimeoutMs);
      } catch (const PluginError& e) {
        got = e.status();
        message = e.what();
      }
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (got == CB_OK)
        problem = "the op completed though no other rank posted it";
      else if (got != CB_ERR_TIMEOUT && got != CB_ERR_REMOTE)
        problem = fmt::format("ended with {} instead of timeout: {}", status_name(got), message);
      else if (took > kCreateTimeoutMs / 1000.0 + kSlackS)
        problem = fmt::format("returned after {:.1f} s with a communicator created with timeout_ms = {}: a plugin's "
                              "per-op limit must not exceed comm_create's (its own default is then too long)",
                              took, kCreateTimeoutMs);
      ctx.report(name, problem.empty() ? ConformanceResult::Pass : ConformanceResult::Fail,
                 problem.empty() ? fmt::format("{} returned {} after {:.1f} s (comm_create timeout {} ms)",
                                               allreduce ? "allreduce" : "barrier", status_name(got), took,
                                               kCreateTimeoutMs)
                                 : problem);
    }
    for_suite.barrier(Millis(kCreateTimeoutMs * 4 + 60000));  // rank 0 done: the others go on
    out.phase("conformance deadline: abort");
    session.abort_comm();
    session.shutdown();
  } catch (const std::exception& e) {
    ctx.report(name, ConformanceResult::Fail, e.what());
  }
  return 0;
}

}  // namespace commbench
