// The order of one rank's conformance checks, and the lifecycle ones: the function table,
// capabilities and struct_size, communicator create/destroy cycles without leaks, a timeout,
// an abort with an op pending, finalize.
#include "conformance/rank_suite.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <exception>
#include <iterator>
#include <set>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/exit_codes.h"
#include "conformance/suite_context.h"
#include "device/gpu_binding.h"
#include "plugin/search_path.h"
#include "plugin/host_services.h"
#include "worker/memory_footprint.h"

namespace commbench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kCycles = 20;                       // comm_create/comm_destroy pairs measured
constexpr uint64_t kRssGrowthLimit = 16u << 20;   // over those cycles
constexpr int32_t kTimeoutProbeMs = 500;          // the wait that must time out
constexpr double kPromptS = 10;                   // how soon a timeout or an abort must return

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What each open descriptor refers to ("socket:[123]", "/dev/nvidia0", "anon_inode:[eventfd]").
std::multiset<std::string> open_fds() {
  std::multiset<std::string> out;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    const int own = ::dirfd(d);
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) continue;
      char target[512] = {0};
      const ssize_t n = ::readlinkat(own, e->d_name, target, sizeof(target) - 1);
      out.insert(n > 0 ? std::string(target, static_cast<size_t>(n)) : std::string("?"));
    }
    ::closedir(d);
  }
  return out;
}

// Descriptors in `after` beyond those in `before`, by what they refer to.
std::vector<std::string> new_fds(const std::multiset<std::string>& before, const std::multiset<std::string>& after) {
  std::vector<std::string> grown;
  std::set_difference(after.begin(), after.end(), before.begin(), before.end(), std::back_inserter(grown));
  return grown;
}

void check_table(const SuiteContext& ctx, const LoadedPlugin& plugin) {
  const cb_backend_api& api = plugin.api;
  std::vector<std::string> wrong;
  const size_t v10 = CB_STRUCT_SIZE(cb_backend_api, group_end);
  if (api.struct_size < v10)
    wrong.push_back(fmt::format("struct_size {} is smaller than ABI 1.0's table ({})", api.struct_size, v10));
  const std::string file = std::filesystem::path(plugin.path).filename().string();
  const auto file_name = plugin_name_from_file(file);
  if (file_name && *file_name != api.name)
    wrong.push_back(fmt::format("table name '{}' differs from the file's '{}'", api.name, *file_name));
  if (!file_name) {  // conformance loads it by path; a run never would
    const std::string own = api.name ? api.name : "";
    const bool usable = plugin_name_from_file(plugin_file_name(own)).has_value();
    wrong.push_back(fmt::format("'{}' is never loaded from the search path: {}; {}", file, kMisnamedWhy,
                                usable ? "name it " + plugin_file_name(own)
                                       : fmt::format("the table's name '{}' is not such a name either: change both", own)));
  }
  // abi_minor and struct_size must agree (plugin-abi.md §2): a table that said 1.3 with 1.0's size
  // passed, and the loader dropped its `complete` and option descriptors without a word.
  constexpr size_t kMinorSizes[] = {v10, CB_STRUCT_SIZE(cb_backend_api, complete),
                                    CB_STRUCT_SIZE(cb_backend_api, num_option_descriptors),
                                    CB_STRUCT_SIZE(cb_backend_api, enqueue)};
  static_assert(std::size(kMinorSizes) == CB_ABI_MINOR + 1, "a size per minor this core knows");
  if (api.abi_major == CB_ABI_MAJOR && api.abi_minor <= CB_ABI_MINOR && api.struct_size >= v10 &&
      api.struct_size != kMinorSizes[api.abi_minor])
    wrong.push_back(fmt::format("struct_size {} is not ABI 1.{}'s table size {}, which abi_minor {} says: set "
                                "struct_size = CB_STRUCT_SIZE(cb_backend_api, <last field of that minor>) (plugin-abi.md "
                                "§2); the loader reads the table by struct_size, so functions past it are ignored",
                                api.struct_size, api.abi_minor, kMinorSizes[api.abi_minor], api.abi_minor));
  if (api.abi_minor > CB_ABI_MINOR && api.struct_size < kMinorSizes[CB_ABI_MINOR])
    wrong.push_back(fmt::format("abi_minor {} is newer than this commbench's 1.{}, but struct_size {} is smaller than "
                                "1.{}'s table ({})",
                                api.abi_minor, CB_ABI_MINOR, api.struct_size, CB_ABI_MINOR, kMinorSizes[CB_ABI_MINOR]));
  if (!api.version || !*api.version) wrong.push_back("version is empty");
  if ((api.group_start == nullptr) != (api.group_end == nullptr)) wrong.push_back("only one of group_start/group_end is set");
  if ((api.mem_alloc == nullptr) != (api.mem_free == nullptr)) wrong.push_back("only one of mem_alloc/mem_free is set");
  const cb_capabilities caps = query_capabilities(api, nullptr);
  if ((caps.flags & CB_CAP_GROUPS) && !api.group_start) wrong.push_back("CB_CAP_GROUPS without group_start/group_end");
  if (wrong.empty())
    return ctx.report("function table", ConformanceResult::Pass,
                      fmt::format("ABI {}.{}, struct_size {}", api.abi_major, api.abi_minor, api.struct_size));
  ctx.report("function table", ConformanceResult::Fail, fmt::format("{}", fmt::join(wrong, "; ")));
}

// The static set, the runtime set (never larger), and an older host's smaller struct.
void check_capabilities(const SuiteContext& ctx) {
  const cb_backend_api& api = ctx.api();
  std::vector<std::string> wrong;
  const cb_capabilities s = query_capabilities(api, nullptr), r = ctx.caps;
  const auto extra = [](uint64_t runtime, uint64_t stat) { return runtime & ~stat; };
  if (extra(r.ops, s.ops) || extra(r.dtypes, s.dtypes) || extra(r.reduce_dtypes, s.reduce_dtypes) ||
      extra(r.redops, s.redops) || extra(r.mem_types, s.mem_types))
    wrong.push_back("this process's capabilities include bits the static set lacks (may be smaller, never larger)");
  if (r.ops & ~((uint64_t{1} << CB_OP_COUNT_V1) - 1)) wrong.push_back("ops has bits beyond the ABI's ops");
  if (!(r.flags & (CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE)) && (r.ops & ~(CB_BIT(CB_OP_BARRIER))))
    wrong.push_back("neither CB_CAP_IN_PLACE nor CB_CAP_OUT_OF_PLACE");
  const bool reduces = r.ops & (CB_BIT(CB_OP_ALLREDUCE) | CB_BIT(CB_OP_REDUCESCATTER) | CB_BIT(CB_OP_REDUCE));
  if (reduces && (!r.reduce_dtypes || !r.redops)) wrong.push_back("a reduction op with no reduce dtype or redop");
  // A host built against a header whose cb_capabilities ends at `ops`: nothing past it written.
  struct {
    cb_capabilities caps;
    unsigned char guard[16];
  } older;
  std::memset(&older, 0xA5, sizeof(older));
  older.caps.struct_size = CB_STRUCT_SIZE(cb_capabilities, ops);
  const CallResult c = call(api, api.get_capabilities(ctx.session.backend(), &older.caps));
  const auto* bytes = reinterpret_cast<const unsigned char*>(&older);
  size_t touched = 0;
  for (size_t i = CB_STRUCT_SIZE(cb_capabilities, ops); i < sizeof(older); ++i) touched += bytes[i] != 0xA5;
  if (c.code != CB_OK) wrong.push_back("get_capabilities refused an older host's smaller struct: " + c.message);
  else if (older.caps.struct_size != CB_STRUCT_SIZE(cb_capabilities, ops))
    wrong.push_back("get_capabilities changed the caller's struct_size");
  else if (touched) wrong.push_back(fmt::format("get_capabilities wrote {} bytes past the caller's struct_size", touched));
  else if (older.caps.ops != r.ops) wrong.push_back("get_capabilities with a smaller struct gave other ops");
  if (wrong.empty()) return ctx.report("capabilities and struct_size", ConformanceResult::Pass, "runtime set within the static set; an older host's struct respected");
  ctx.report("capabilities and struct_size", ConformanceResult::Fail, fmt::format("{}", fmt::join(wrong, "; ")));
}

void check_create_destroy_cycles(SuiteContext& ctx, int32_t create_timeout_ms) {
  const char* name = "comm create/destroy without leaks";
  if (!ctx.broken.empty()) return ctx.report(name, ConformanceResult::Skip, ctx.broken);
  ctx.out.phase("conformance: comm_destroy after refused and failed calls");
  try {
    ctx.session.destroy_comm();
  } catch (const std::exception& e) {
    ctx.broken = "comm_destroy failed";
    return ctx.report(name, ConformanceResult::Fail, fmt::format("comm_destroy after refused calls: {}", e.what()));
  }
  uint64_t rss0 = 0;
  // A leak grows with every cycle. CUDA and NCCL open descriptors lazily, once (the driver's
  // device nodes, NCCL's proxy and shared-memory files): those appear in some cycle and stay. So
  // only growth that continues through both halves of the cycles counts as the plugin's leak.
  std::multiset<std::string> fds0, fds_mid;
  // On a GPU a communicator also holds device memory (NCCL's buffers): a leak there shows only
  // in cudaMemGetInfo, never in the host's RSS.
  const auto device_free = [&]() -> int64_t { return ctx.gpu ? static_cast<int64_t>(ctx.gpu->free_bytes()) : 0; };
  int64_t dev0 = 0;
  try {
    for (int i = 0; i < kCycles + 3; ++i) {
      if (i == 3) {  // after warming up whatever the first communicators cache
        rss0 = resident_bytes();
        fds0 = open_fds();
        dev0 = device_free();
      }
      if (i == 3 + kCycles / 2) fds_mid = open_fds();
      ctx.out.phase(fmt::format("conformance: comm_create/comm_destroy cycle {}", i + 1));
      ctx.session.create_comm(create_timeout_ms);
      ctx.session.destroy_comm();
    }
  } catch (const std::exception& e) {
    ctx.broken = "a communicator could not be created again";
    return ctx.report(name, ConformanceResult::Fail, e.what());
  }
  const uint64_t rss1 = resident_bytes();
  const std::multiset<std::string> fds1 = open_fds();
  const int64_t dev_lost = dev0 - device_free();  // bytes of device memory no longer free
  const std::vector<std::string> first_half = new_fds(fds0, fds_mid), second_half = new_fds(fds_mid, fds1);
  const int fd_growth = static_cast<int>(fds1.size()) - static_cast<int>(fds0.size());
  std::string problem;
  if (!first_half.empty() && !second_half.empty())
    problem = fmt::format("{} file descriptors more after {} cycles, still growing in the last {} ({})", fd_growth,
                          kCycles, kCycles - kCycles / 2, fmt::join(second_half, ", "));
  else if (rss1 > rss0 + kRssGrowthLimit)
    problem = fmt::format("resident memory grew by {:.1f} MiB over {} cycles", (rss1 - rss0) / 1048576.0, kCycles);
  else if (dev_lost > static_cast<int64_t>(kRssGrowthLimit))
    problem = fmt::format("free device memory (cudaMemGetInfo) shrank by {:.1f} MiB over {} cycles", dev_lost / 1048576.0, kCycles);
  try {
    ctx.session.create_comm(create_timeout_ms);
  } catch (const std::exception& e) {
    ctx.broken = "a communicator could not be created again";
    problem = e.what();
  }
  if (!problem.empty()) return ctx.report(name, ConformanceResult::Fail, problem);
  ctx.report(name, ConformanceResult::Pass,
             fmt::format("{} cycles: {:+.1f} MiB resident, {:+d} fds{}", kCycles,
                         (static_cast<double>(rss1) - static_cast<double>(rss0)) / 1048576.0, fd_growth,
                         ctx.gpu ? fmt::format(", {:+.1f} MiB device memory in use", dev_lost / 1048576.0) : ""));
}

// Rank 0 waits for a message no one sends: the wait must end with CB_ERR_TIMEOUT, promptly.
// Then every rank aborts its communicator, rank 0's receive still pending in the plugin.
void check_timeout_and_abort(SuiteContext& ctx) {
  const bool can_probe = ctx.world >= 2 && ctx.has_op(CB_OP_RECV) && ctx.broken.empty();
  if (!ctx.broken.empty()) ctx.report("timeout", ConformanceResult::Skip, ctx.broken);
  else if (!can_probe) ctx.report("timeout", ConformanceResult::Skip, ctx.world < 2 ? "needs 2 ranks" : "no recv to wait on");
  if (can_probe && ctx.rank == 0) {
    ctx.out.phase("conformance: a receive that no peer sends to, waited for with a 500 ms timeout");
    std::string problem;
    try {
      ScratchMemory buf(ctx, ctx.usable_memory().front(), 4096);
      cb_op_args a = base_args(ctx, CB_OP_RECV, nullptr, buf.get(), 1, CB_DTYPE_UINT8, buf.mem());
      a.peer = 1;
      a.tag = 77;
      const auto t0 = Clock::now();
      cb_request* req = ctx.session.post(a);
      const CallResult w = call(ctx.api(), ctx.api().wait(req, kTimeoutProbeMs));
      const double took = seconds_since(t0);
      ctx.session.release(req);
      if (w.code != CB_ERR_TIMEOUT)
        problem = w.code == CB_OK ? "the wait succeeded though no peer sent anything"
                                  : fmt::format("the wait ended with {} instead of timeout: {}", status_name(w.code), w.message);
      else if (took > kPromptS)
        problem = fmt::format("CB_ERR_TIMEOUT came after {:.1f} s for a {} ms timeout", took, kTimeoutProbeMs);
    } catch (const std::exception& e) {
      problem = e.what();
    }
    ctx.report("timeout", problem.empty() ? ConformanceResult::Pass : ConformanceResult::Fail,
               problem.empty() ? "wait(500 ms) on a receive no one sends: CB_ERR_TIMEOUT" : problem);
  }
  if (ctx.world >= 2) ctx.boot.barrier(Millis(ctx.op_timeout_ms * 2));  // rank 0 done waiting
  const char* name = ctx.api().comm_abort ? "abort with an op pending" : "destroy with an op pending (no comm_abort)";
  ctx.out.phase(fmt::format("conformance: {}", name));
  const auto t0 = Clock::now();
  try {
    ctx.session.abort_comm();
    const double took = seconds_since(t0);
    if (took > kPromptS)
      return ctx.report(name, ConformanceResult::Fail, fmt::format("took {:.1f} s: an abort must not wait for peers", took));
    ctx.report(name, ConformanceResult::Pass, fmt::format("returned in {:.3f} s", took));
  } catch (const std::exception& e) {
    ctx.report(name, ConformanceResult::Fail, e.what());
  }
}

}  // namespace

int run_rank_suite(const LoadedPlugin& plugin, Bootstrap& for_plugin, Bootstrap& for_suite, ResultChannel& out,
                   const RankSuiteOptions& opts) {
  HostServices host(for_plugin, opts.rank, opts.world, opts.options);
  BackendSession session(plugin.api);
  SuiteContext ctx{session, for_suite, out, opts.rank, opts.world, opts.op_timeout_ms};
  ctx.max_bytes = opts.max_bytes;
  // Device memory needs the GPU bound before init, as in a worker (the rank's GPU, or the
  // backend's `device` option, so that suite and plugin use the same device).
  std::unique_ptr<GpuDevice> gpu;
  if (query_capabilities(plugin.api, nullptr).mem_types & CB_BIT(CB_MEM_CUDA)) {
    try {
      gpu = GpuDevice::open(opts.rank, opts.world, device_option(opts.options), false, &ctx.gpu_unusable);
    } catch (const std::exception& e) {
      ctx.gpu_unusable = e.what();
    }
    ctx.gpu = gpu.get();
  }
  if (opts.rank == 0) check_table(ctx, plugin);
  out.phase("conformance: init");
  try {
    session.init(host.get());
  } catch (const PluginError& e) {
    if (e.skips_backend()) {
      ctx.report("init", ConformanceResult::Skip, fmt::format("the backend is unavailable here: {}", e.what()));
      return kWorkerExitUnavailable;
    }
    ctx.report("init", ConformanceResult::Fail, e.what());
    return 0;
  }
  ctx.caps = session.capabilities();
  check_capabilities(ctx);
  out.phase("conformance: comm_create");
  const int32_t create_timeout_ms = opts.op_timeout_ms * 2;
  try {
    session.create_comm(create_timeout_ms);
    ctx.report("comm_create", ConformanceResult::Pass, "");
  } catch (const std::exception& e) {
    ctx.report("comm_create", ConformanceResult::Fail, e.what());
    return 0;
  }
  check_op_matrix(ctx);
  check_op_sizes(ctx);
  check_op_leaks(ctx);
  check_concurrent_collectives(ctx);
  check_self_send_recv(ctx);
  check_p2p_pending_across_collective(ctx);
  check_unadvertised_refused(ctx);
  check_bad_arguments(ctx);
  check_create_destroy_cycles(ctx, create_timeout_ms);
  check_timeout_and_abort(ctx);
  out.phase("conformance: finalize");
  try {
    session.shutdown();
    ctx.report("finalize", ConformanceResult::Pass, "");
  } catch (const std::exception& e) {
    ctx.report("finalize", ConformanceResult::Fail, e.what());
  }
  return 0;
}

int run_unknown_option_check(const LoadedPlugin& plugin, Bootstrap& bootstrap, ResultChannel& out) {
  const char* name = "unknown option refused";
  const std::map<std::string, std::string> options{{"commbench_conformance_no_such_option", "1"}};
  HostServices host(bootstrap, 0, 1, options);
  BackendSession unused(plugin.api);  // SuiteContext needs one; this check calls the ABI itself
  SuiteContext ctx{unused, bootstrap, out};
  out.phase("conformance: init with an option no plugin knows");
  cb_backend* backend = nullptr;
  const CallResult r = call(plugin.api, plugin.api.init(host.get(), &backend));
  if (r.code == CB_OK) {
    call(plugin.api, plugin.api.finalize(backend));
    ctx.report(name, ConformanceResult::Fail, "init accepted option 'commbench_conformance_no_such_option': a typo "
                                        "in an experiment would go unnoticed; refuse it with CB_ERR_INVALID_ARGUMENT");
  } else if (r.code == CB_ERR_UNAVAILABLE) {
    ctx.report(name, ConformanceResult::Skip, "the backend is unavailable here: " + r.message);
  } else if (r.code != CB_ERR_INVALID_ARGUMENT) {
    ctx.report(name, ConformanceResult::Fail, fmt::format("init answered {} instead of invalid_argument: {}", status_name(r.code), r.message));
  } else if (r.message.find("commbench_conformance_no_such_option") == std::string::npos) {
    ctx.report(name, ConformanceResult::Fail, "the error does not name the unknown option: " + r.message);
  } else {
    ctx.report(name, ConformanceResult::Pass, r.message);
  }
  return 0;
}

}  // namespace commbench
