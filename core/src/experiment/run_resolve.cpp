#include "experiment/run_resolve.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commbench/sdk/dtypes.hpp"
#include "experiment/run_setting_table.h"
#include "experiment/sizes.h"

namespace commbench {
namespace {

bool any_op(const std::vector<OpKind>& ops, bool (*pred)(const OpInfo&)) {
  return std::any_of(ops.begin(), ops.end(), [&](OpKind k) { return pred(op_info(k)); });
}

bool only_barrier(const std::vector<OpKind>& ops) {
  return std::all_of(ops.begin(), ops.end(), [](OpKind k) { return k == OpKind::Barrier; });
}

// Merges the layers field by field into a RunSpec, remembering which fields are unusable
// because the layer that decides them wrote a bad value (already reported).
class Merger {
 public:
  Merger(const RunLayer& run, const RunLayer& defaults, RunSpec& spec)
      : run_(run), defaults_(defaults), spec_(spec) {}

  // The layer that decides `key`: the run's if it writes the key, else [defaults]' if they do.
  const RunLayer* source(const std::string& key) const {
    if (run_.writes(key)) return &run_;
    if (defaults_.writes(key)) return &defaults_;
    return nullptr;
  }

  // Takes `field` from the deciding layer, if any; otherwise `out` keeps its built-in default.
  // Returns false when the deciding layer's value is invalid.
  template <class T>
  bool take(std::optional<T> RunLayer::*field, const std::string& key, T& out) {
    const RunLayer* from = source(key);
    if (!from) return true;
    copy_where(*from, key);
    if (!(from->*field)) {
      usable_ = false;
      return false;
    }
    out = *(from->*field);
    return true;
  }

  // Every setting of the table from its deciding layer; one whose deciding layer wrote an
  // invalid value (already reported) makes the run unusable and fails ok(key).
  void take_settings() {
    for (const RunSetting& setting : run_settings()) {
      const std::string key(setting.key);
      const RunLayer* from = source(key);
      if (!from) continue;
      copy_where(*from, key);
      if (from->invalid.count(key)) {
        usable_ = false;
        bad_.insert(key);
        continue;
      }
      setting.copy(from->settings, spec_);
    }
  }
  // False when `key` (a setting) came from an invalid value.
  bool ok(const std::string& key) const { return bad_.count(key) == 0; }

  void merge_env() {
    for (const RunLayer* layer : {&defaults_, &run_}) {
      copy_where(*layer, "env");
      for (const auto& [k, v] : layer->env) spec_.env[k] = v;
    }
  }

  // Options of a backend the run does not use: an error in the run's own table; inherited from
  // [defaults] they are dropped (defaults may carry options for every backend of the file).
  void merge_options(DiagnosticSink& sink) {
    const auto& backends = spec_.backends;
    auto uses = [&](const std::string& b) {
      return std::find(backends.begin(), backends.end(), b) != backends.end();
    };
    for (const auto& [backend, opts] : defaults_.options) {
      if (!uses(backend)) continue;
      copy_where(defaults_, "options." + backend);
      for (const auto& [k, v] : opts) spec_.options[backend][k] = v;
    }
    for (const auto& [backend, opts] : run_.options) {
      if (!uses(backend)) {
        sink.error(pos_in(run_, "options." + backend),
                   fmt::format("options for '{}' but the run's backends are [{}]", backend,
                               fmt::join(backends, ", ")));
        continue;
      }
      copy_where(run_, "options." + backend);
      for (const auto& [k, v] : opts) spec_.options[backend][k] = v;
    }
  }

  bool usable() const { return usable_; }

  static SourcePos pos_in(const RunLayer& layer, const std::string& key) {
    auto it = layer.where.find(key);
    return it != layer.where.end() ? it->second : layer.pos;
  }

 private:
  // Copies the positions of `key` and of its elements/sub-keys ("key[i]", "key.x").
  void copy_where(const RunLayer& from, const std::string& key) {
    for (auto it = from.where.lower_bound(key); it != from.where.end(); ++it) {
      const std::string& k = it->first;
      if (k.compare(0, key.size(), key) != 0) break;
      if (k.size() == key.size() || k[key.size()] == '[' || k[key.size()] == '.')
        spec_.where[k] = it->second;
    }
  }

  const RunLayer& run_;
  const RunLayer& defaults_;
  RunSpec& spec_;
  bool usable_ = true;
  std::set<std::string> bad_;
};

void require(const Merger& m, const RunLayer& run, const std::string& key, std::string_view example,
             DiagnosticSink& sink) {
  if (m.source(key)) return;
  sink.error(run.pos, fmt::format("'{}' is required: add e.g. {} to this [[run]] or to [defaults]",
                                  key, example));
}

// Every size in bytes must hold a whole number of elements of every dtype; element counts must
// stay addressable in bytes.
void check_sizes_against_dtypes(const RunSpec& spec, DiagnosticSink& sink) {
  for (size_t i = 0; i < spec.sizes.size(); ++i) {
    const SizeSpec& size = spec.sizes[i];
    const SourcePos at = spec.pos_of(fmt::format("sizes[{}]", i));
    for (cb_dtype d : spec.dtypes) {
      const size_t esize = sdk::dtype_size(d);
      if (!size.elements && size.value % esize != 0)
        sink.error(at, fmt::format("size {} B is not a multiple of {}'s {}-byte element size",
                                   size.value, sdk::dtype_name(d), esize));
      if (size.elements && size.value > kMaxSize / esize)
        sink.error(at, fmt::format("size {} of {} is more than 2^63-1 bytes", size.text,
                                   sdk::dtype_name(d)));
    }
  }
  // A size written in elements and another in bytes can be the same case for a dtype ("1K
  // elements" and 4096 of f32): it would be measured twice and the copies read as repeats.
  for (cb_dtype d : spec.dtypes) {
    const size_t esize = sdk::dtype_size(d);
    std::map<uint64_t, size_t> first;
    for (size_t i = 0; i < spec.sizes.size(); ++i) {
      const SizeSpec& size = spec.sizes[i];
      if (size.elements && size.value > kMaxSize / esize) continue;  // refused above
      const auto [it, added] = first.emplace(size.bytes(esize), i);
      // Two sizes in the same unit that are equal are refused where the list is read.
      if (!added && spec.sizes[it->second].elements != size.elements)
        sink.error(spec.pos_of(fmt::format("sizes[{}]", i)),
                   fmt::format("size {} is {} B of {}, as is size {} (sizes[{}]): the case would be measured "
                               "twice; keep one", size.text, size.bytes(esize), sdk::dtype_name(d),
                               spec.sizes[it->second].text, it->second));
    }
  }
}

// Strong scaling of a data-parallel workload divides the global batch among the ranks (plan.cpp):
// every world size must divide it.
void check_strong_batch(const RunSpec& spec, DiagnosticSink& sink) {
  if (spec.workload != WorkloadKind::DataParallel) {
    sink.error(spec.pos_of("scaling"), "scaling = \"strong\" applies to op sweeps and to workload = \"data_parallel\"; "
                                       "workload = \"memory\" measures each batch size as written: remove 'scaling'");
    return;
  }
  for (int ws : spec.world_sizes)
    if (spec.batch_size % ws != 0) {
      sink.error(spec.pos_of("batch_size"),
                 fmt::format("scaling = \"strong\" splits batch_size {} (the global batch) among the ranks, but world "
                             "size {} does not divide it: use a multiple of every world size",
                             spec.batch_size, ws));
      return;
    }
}

// Strong scaling divides each size among the ranks (plan.cpp): it must divide into whole
// elements at every world size, for every op and dtype. One message per size that does not
// divide, naming the first world size, op and dtype it fails for and the multiple that suits
// them all (the least common multiple): advice from the first misfit alone ("a multiple of 12
// bytes" at 3 ranks) was refused again at 5.
void check_strong_shares(const RunSpec& spec, DiagnosticSink& sink) {
  // What a size must be a multiple of: in bytes, and in elements (for a size written in them).
  // 0: beyond any size one would write (world sizes 1..47 have an lcm above 2^64), and then the
  // first misfit's own multiple is the advice.
  constexpr uint64_t kLargest = uint64_t{1} << 48;
  const auto lcm_capped = [](uint64_t a, uint64_t b) -> uint64_t {
    if (a == 0 || b == 0) return 0;
    const uint64_t step = b / std::gcd(a, b);
    return step > kLargest / a ? 0 : a * step;
  };
  uint64_t bytes_multiple = 1, elements_multiple = 1;
  for (cb_dtype d : spec.dtypes)
    for (int ws : spec.world_sizes)
      for (OpKind op : spec.ops) {
        if (op == OpKind::Barrier) continue;
        const uint64_t shares = strong_scaling_share(op, ws);
        bytes_multiple = lcm_capped(bytes_multiple, shares * sdk::dtype_size(d));
        elements_multiple = lcm_capped(elements_multiple, shares);
      }
  for (size_t i = 0; i < spec.sizes.size(); ++i) {
    const SizeSpec& size = spec.sizes[i];
    const auto first_misfit = [&]() -> std::optional<std::string> {
      for (cb_dtype d : spec.dtypes) {
        const uint64_t esize = sdk::dtype_size(d);
        for (int ws : spec.world_sizes)
          for (OpKind op : spec.ops) {
            if (op == OpKind::Barrier) continue;
            const uint64_t shares = strong_scaling_share(op, ws);
            if (size.bytes(esize) % (shares * esize) == 0) continue;
            const uint64_t all = size.elements ? elements_multiple : bytes_multiple;
            const std::string unit = size.elements ? "elements" : "bytes";
            const std::string advice =
                all != 0 ? fmt::format("use a multiple of {} {} (whole elements for every op, dtype and world size "
                                       "of the run)", all, unit)
                         : fmt::format("use a multiple of {} {} for this one (no size suits every world size of the "
                                       "run: split them into runs)",
                                       size.elements ? shares : shares * esize, unit);
            return fmt::format("scaling = \"strong\" divides size {} among {} shares for '{}' at world size {}, which "
                               "is not a whole number of {} elements: {}",
                               size.text, shares, op_info(op).name, ws, sdk::dtype_name(d), advice);
          }
      }
      return std::nullopt;
    };
    if (auto why = first_misfit()) sink.error(spec.pos_of(fmt::format("sizes[{}]", i)), *why);
  }
}

// p2p patterns need two ranks; root and peers must be ranks of every world size.
void check_world_sizes(const RunSpec& spec, const RunLayer& run, const Merger& m,
                       DiagnosticSink& sink) {
  for (size_t w = 0; w < spec.world_sizes.size(); ++w) {
    const int ws = spec.world_sizes[w];
    for (size_t j = 0; j < spec.ops.size(); ++j) {
      const OpInfo& op = op_info(spec.ops[j]);
      if (ws >= op.min_world_size) continue;
      // Point at the number the user should change: the run's own world size if it set one,
      // else the op (the world size is inherited and may suit the other runs).
      const SourcePos at = run.writes("world_sizes") ? spec.pos_of(fmt::format("world_sizes[{}]", w))
                                                     : spec.pos_of(fmt::format("ops[{}]", j));
      sink.error(at, fmt::format("world size {} is too small for '{}': it needs at least {} ranks",
                                 ws, op.name, op.min_world_size));
    }
    // Only where an op uses them: otherwise the warning below says they have no effect, and a
    // run shrunk with --set (world_size = 2 on a file with root = 2) must not fail over them.
    const bool rooted = std::any_of(spec.ops.begin(), spec.ops.end(), [](OpKind o) { return op_info(o).rooted; });
    const bool paired = std::any_of(spec.ops.begin(), spec.ops.end(), between_two_peers);
    if (m.source("root") && rooted && spec.root >= ws)
      sink.error(spec.pos_of("root"),
                 fmt::format("'root' {} is not a rank of world size {} (ranks are 0..{})",
                             spec.root, ws, ws - 1));
    if (m.source("peers") && paired) {
      for (size_t p = 0; p < spec.peers.size(); ++p)
        if (spec.peers[p] >= ws)
          sink.error(spec.pos_of(fmt::format("peers[{}]", p)),
                     fmt::format("peer {} is not a rank of world size {} (ranks are 0..{})",
                                 spec.peers[p], ws, ws - 1));
    }
  }
}

// An `expect` that no case of its run can meet is a typo (an op the run does not measure, a size
// range that holds none of its sizes): validate says so instead of `check` reporting nothing.
void check_expectations(const RunSpec& spec, DiagnosticSink& sink) {
  for (const Expectation& e : spec.expect) {
    std::vector<std::string> run_ops;
    for (OpKind o : spec.ops) run_ops.emplace_back(op_info(o).name);
    for (OpKind o : e.ops)
      if (std::find(spec.ops.begin(), spec.ops.end(), o) == spec.ops.end())
        sink.error(e.pos, fmt::format("this expectation is about '{}', which run '{}' never measures (its ops: {}): "
                                      "it could never be checked",
                                      op_info(o).name, spec.name, fmt::join(run_ops, ", ")));
    // msg_rate_mps is counted only for patterns that deliver messages (OpInfo::messages).
    const std::vector<OpKind>& judged = e.ops.empty() ? spec.ops : e.ops;
    const bool counts_messages = std::any_of(judged.begin(), judged.end(), uses_window);
    std::vector<std::string_view> judged_names;  // a loop, not std::views: the fuzz build's clang 14 lacks them
    for (OpKind o : judged) judged_names.push_back(op_info(o).name);
    for (const auto& [metric, condition] : e.conditions)
      if (metric == "msg_rate_mps" && !counts_messages && !judged.empty())
        sink.error(e.pos, fmt::format("this expectation checks msg_rate_mps, which none of its ops ({}) has (it is "
                                      "counted for patterns that deliver messages: unidir_bw, bidir_bw, msg_rate): "
                                      "it would compare 0",
                                      fmt::join(judged_names, ", ")));
    if (!e.min_bytes && !e.max_bytes) continue;
    bool any = false;
    for (const SizeSpec& size : spec.sizes)
      for (cb_dtype d : spec.dtypes) {
        const uint64_t b = size.bytes(sdk::dtype_size(d));
        any |= (!e.min_bytes || b >= *e.min_bytes) && (!e.max_bytes || b <= *e.max_bytes);
      }
    if (!any && !spec.sizes.empty())
      sink.error(e.pos, fmt::format("no size of run '{}' lies within this expectation's min_size..max_size: it could "
                                    "never be checked",
                                    spec.name));
  }
}

// A workload's records are steps (data_parallel: time_us is the step) or memory figures (memory:
// no case record at all): bandwidths and message rates are 0 there, so such an expectation could
// only miss (it did, "busbw_gbps >= 0.000001, got 0 GB/s", after the whole run).
void check_workload_expectations(const RunSpec& spec, DiagnosticSink& sink) {
  for (const Expectation& e : spec.expect) {
    if (spec.workload == WorkloadKind::Memory) {
      sink.error(e.pos, "workload = \"memory\" writes memory records, not timed cases: an expectation could never "
                        "be checked (read the memory figures in summary.md or results.jsonl)");
      continue;
    }
    // Its records are the steps (op "data_parallel"), never the model's collectives one by one.
    if (!e.ops.empty()) {
      std::vector<std::string_view> names;
      for (OpKind o : e.ops) names.push_back(op_info(o).name);
      sink.error(e.pos, fmt::format("this expectation is about '{}', but a workload = \"data_parallel\" run records "
                                    "whole steps (op \"data_parallel\"), not its collectives: it could never be "
                                    "checked; drop its 'op' to judge the step time",
                                    fmt::join(names, "', '")));
    }
    for (const auto& [metric, condition] : e.conditions)
      if (metric.rfind("time_us", 0) != 0)
        sink.error(e.pos, fmt::format("this expectation checks {}, which a workload = \"data_parallel\" step does not "
                                      "have (its record is the whole step: time_us, time_us_p50 and time_us_p99 are "
                                      "step times): it would compare 0",
                                      metric));
  }
}

// Ops without an in-place layout the core measures (OpInfo::in_place: alltoall, the
// point-to-point patterns) get no in-place case: said, and an error when that leaves an op of
// the run with no case at all (the job would "pass" having measured nothing of it).
void check_in_place(const RunSpec& spec, DiagnosticSink& sink) {
  const auto& p = spec.placements;
  if (std::find(p.begin(), p.end(), Placement::InPlace) == p.end()) return;
  const bool out_of_place_too = std::find(p.begin(), p.end(), Placement::OutOfPlace) != p.end();
  std::vector<std::string_view> without, collectives;
  for (OpKind o : spec.ops)
    if (!op_info(o).in_place && o != OpKind::Barrier) {
      without.push_back(op_info(o).name);
      if (!op_info(o).point_to_point) collectives.push_back(op_info(o).name);
    }
  if (without.empty()) return;
  // Point-to-point patterns have no in-place form to expect: only a collective is worth a word.
  if (out_of_place_too && !collectives.empty())
    sink.warning(spec.pos_of("placement"),
                 fmt::format("{} {} measured out of place only: in_place applies to the collectives with an in-place "
                             "layout", fmt::join(collectives, ", "), collectives.size() == 1 ? "is" : "are"));
  else if (!out_of_place_too)
    sink.error(spec.pos_of("placement"),
               fmt::format("placement = \"in_place\" leaves {} with no case (no in-place layout is measured for {}): "
                           "add \"out_of_place\" or run {} in a [[run]] of its own",
                           fmt::join(without, ", "), without.size() == 1 ? "it" : "them",
                           without.size() == 1 ? "it" : "them"));
}

// method = "graph" captures the timed iterations into a CUDA graph: only device memory on a
// stream-ordered backend has one. On any other memory every case would be `unsupported` and the
// job would exit 0 having measured nothing.
void check_graph(const RunSpec& spec, DiagnosticSink& sink) {
  if (spec.method != MeasureMethod::Graph || spec.memory == CB_MEM_CUDA) return;
  sink.error(spec.pos_of("method"),
             fmt::format("method = \"graph\" captures the timed iterations into a CUDA graph, which needs memory = "
                         "\"cuda\" on a stream-ordered backend (NCCL, NCCLX); on memory = \"{}\" every case would be "
                         "unsupported. Use method = \"batch\", or set memory = \"cuda\"",
                         sdk::mem_name(spec.memory)));
}

// Settings the run's own table writes but none of its ops reads: probably a mistake.
void warn_unused(const RunSpec& spec, const RunLayer& run, DiagnosticSink& sink) {
  const auto& ops = spec.ops;
  auto warn = [&](const char* key, const std::string& why) {
    if (run.writes(key))
      sink.warning(spec.pos_of(key), fmt::format("'{}' has no effect: {}", key, why));
  };
  if (spec.workload == WorkloadKind::None) {
    for (const char* key : {"model", "batch_size", "bucket_size", "sharding", "overlap", "steps", "compute_ms", "compute"})
      warn(key, "it is a setting of workload = \"data_parallel\", which this run does not set");
    for (const char* key : {"batch_sizes", "optimizer"})
      warn(key, "it is a setting of workload = \"memory\", which this run does not set");
  } else if (spec.workload == WorkloadKind::Memory) {
    for (const char* key : {"bucket_size", "overlap", "steps", "compute_ms", "compute", "warmup"})
      warn(key, "workload = \"memory\" runs no steps");
    if (run.writes("batch_sizes")) warn("batch_size", "workload = \"memory\" measures each of 'batch_sizes'");
  } else {
    // `optimizer` counts: the run's memory record estimates the optimizer state (docs/workloads.md).
    warn("batch_sizes", "it is a setting of workload = \"memory\" (a data_parallel run measures `batch_size`)");
    if (spec.compute == ComputeSource::Flops) warn("compute_ms", "compute = \"flops\" derives the compute from the model's FLOPs");
    if (spec.sharding == Sharding::Fsdp) warn("bucket_size", "FSDP reduces per layer, not in buckets");
  }
  if (!any_op(ops, [](const OpInfo& o) { return o.reduction; }))
    warn("redops", "none of this run's ops is a reduction");
  if (!any_op(ops, [](const OpInfo& o) { return o.rooted; }))
    warn("root", "none of this run's ops takes a root (broadcast, reduce, gather, scatter)");
  auto has = [&](OpKind k) { return std::find(ops.begin(), ops.end(), k) != ops.end(); };
  if (!has(OpKind::UnidirBw) && !has(OpKind::BidirBw) && !has(OpKind::MsgRate))
    warn("window", "only unidir_bw, bidir_bw and msg_rate use it");
  if (!any_op(ops, [](const OpInfo& o) { return between_two_peers(o.kind); }))
    warn("peers", "only pingpong, unidir_bw and bidir_bw use it");
  if (spec.workload != WorkloadKind::None) {
    // A workload times whole steps (or measures memory) with its own collectives: these op-sweep
    // settings were accepted and silently did nothing.
    const bool memory = spec.workload == WorkloadKind::Memory;
    for (const char* key : {"iterations", "min_time", "target_cv", "max_iterations", "method"})
      warn(key, memory ? "workload = \"memory\" times nothing"
                       : "a data_parallel run times whole steps (its records say method \"per_step\"): set 'steps' "
                         "and 'warmup'");
    warn("placement", memory ? "workload = \"memory\" runs no collective"
                             : "a data_parallel step's collectives are its model's, as the backend places them");
    if (spec.dtypes.size() > 1 && run.writes("dtypes"))
      sink.warning(spec.pos_of("dtypes"), fmt::format("only the first of 'dtypes' ({}) is used: a workload's gradients "
                                                      "have one dtype (one run per dtype measures the others)",
                                                      sdk::dtype_name(spec.dtypes[0])));
  }
  // A workload's `sizes` means nothing (its messages come from the model), whatever its ops.
  if (spec.workload != WorkloadKind::None) warn("sizes", "a workload's messages come from its model");
  else if (only_barrier(ops)) warn("sizes", "barrier moves no data");
  // Strong scaling still divides each size among the ranks with one world size: only weak is moot.
  if (spec.world_sizes.size() < 2 && spec.scaling != ScalingMode::Strong)
    warn("scaling", "the run has one world size, so nothing scales");
  if (spec.memory != CB_MEM_CUDA) {
    warn("device", "only memory = \"cuda\" uses a GPU");
    warn("gpu_timing", "only memory = \"cuda\" with a stream-ordered backend times on the GPU");
    warn("oversubscribe_gpu", "only memory = \"cuda\" puts ranks on GPUs");
  }
  if (spec.method == MeasureMethod::PerIteration)
    warn("rank_aggregation", "method = \"per_iteration\" always takes the slowest rank of each iteration");
  // In batch the OSU-style patterns report one clock (docs/metrics.md); sendrecv aggregates.
  else if (!ops.empty() && std::all_of(ops.begin(), ops.end(), [](OpKind o) {
             return between_two_peers(o) || o == OpKind::MsgRate || o == OpKind::AllPairs;
           }))
    warn("rank_aggregation", "pingpong, unidir_bw and bidir_bw report their first peer's clock, msg_rate rank 0's and "
                             "all_pairs its own sample per transfer (docs/metrics.md)");
  if (spec.target_cv == 0) warn("max_time", "it caps target_cv's repetitions, and target_cv is off");
}

// Each `env` table is capped where it is read; [defaults]' and the run's together could still
// hold twice the cap (then both are non-empty: one alone fits or was refused).
void check_env_size(const RunSpec& spec, const RunLayer& run, const RunLayer& defaults, DiagnosticSink& sink) {
  const size_t total = env_bytes(spec.env);
  if (total <= kMaxEnvBytes || env_bytes(run.env) > kMaxEnvBytes || env_bytes(defaults.env) > kMaxEnvBytes) return;
  sink.error(Merger::pos_in(run, "env"),
             fmt::format("run '{}' passes {} bytes of 'env' with [defaults]' 'env': over {} KiB of environment the "
                         "workers may not start; put large values in files",
                         spec.name, total, kMaxEnvBytes / 1024));
}

}  // namespace

std::optional<RunSpec> resolve_run(const RunLayer& run, const RunLayer& defaults, int index,
                                   DiagnosticSink& sink) {
  const size_t errors_before = sink.error_count();
  RunSpec spec;
  spec.index = index;
  spec.pos = run.pos;
  spec.name = run.name.value_or(fmt::format("run{}", index));
  spec.world_sizes = {2};
  spec.dtypes = {CB_DTYPE_F32};
  spec.redops = {CB_REDOP_SUM};

  Merger m(run, defaults, spec);
  m.take(&RunLayer::name, "name", spec.name);
  const bool backends_ok = m.take(&RunLayer::backends, "backends", spec.backends);
  const bool ops_ok = m.take(&RunLayer::ops, "ops", spec.ops);
  const bool sizes_ok = m.take(&RunLayer::sizes, "sizes", spec.sizes);
  const bool dtypes_ok = m.take(&RunLayer::dtypes, "dtypes", spec.dtypes);
  m.take(&RunLayer::redops, "redops", spec.redops);
  m.take(&RunLayer::placements, "placement", spec.placements);
  const bool world_sizes_ok = m.take(&RunLayer::world_sizes, "world_sizes", spec.world_sizes);
  m.take_settings();
  spec.timeout_given = m.source("timeout") != nullptr;
  const bool iterations_ok = m.ok("iterations"), max_iterations_ok = m.ok("max_iterations");
  const bool root_ok = m.ok("root"), peers_ok = m.ok("peers");
  m.merge_env();
  check_env_size(spec, run, defaults, sink);

  require(m, run, "backends", "backends = [\"gloo\"]", sink);
  // A workload run plays its model's collectives instead of op cases (docs/workloads.md).
  const bool workload = m.ok("workload") && spec.workload != WorkloadKind::None;
  if (workload) {
    if (m.ok("model") && !spec.model)
      sink.error(run.pos, "'workload' needs 'model': add e.g. model = \"resnet50\" to this [[run]] or to [defaults]");
    if (m.source("ops"))
      sink.error(spec.pos_of("ops"), "a run with 'workload' plays its model's collectives: remove 'ops' and "
                                     "'sizes', or put the op cases in a [[run]] of their own");
  } else {
    require(m, run, "ops", "ops = [\"allreduce\"]", sink);
  }
  if (backends_ok && m.source("backends")) m.merge_options(sink);
  if (!workload && ops_ok && m.source("ops") && !only_barrier(spec.ops))
    require(m, run, "sizes", "sizes = [\"4KiB\", \"1MiB\"]", sink);

  // The default cap (100000) is no reason to refuse more fixed iterations: it is raised to them.
  if (iterations_ok && max_iterations_ok && !m.source("max_iterations")) spec.max_iterations = std::max(spec.max_iterations, spec.iterations);
  if (iterations_ok && max_iterations_ok && spec.max_iterations < spec.iterations) {
    const char* key = m.source("max_iterations") ? "max_iterations" : "iterations";
    sink.error(spec.pos_of(key), fmt::format("'max_iterations' ({}) is less than 'iterations' ({})",
                                             spec.max_iterations, spec.iterations));
  }
  if (ops_ok && world_sizes_ok && root_ok && peers_ok) check_world_sizes(spec, run, m, sink);
  if (workload && world_sizes_ok && m.ok("scaling") && spec.scaling == ScalingMode::Strong) check_strong_batch(spec, sink);
  if (ops_ok && sizes_ok && dtypes_ok && !only_barrier(spec.ops)) check_sizes_against_dtypes(spec, sink);
  if (ops_ok && sizes_ok && dtypes_ok && world_sizes_ok && m.ok("scaling") &&
      spec.scaling == ScalingMode::Strong && sink.error_count() == errors_before)
    check_strong_shares(spec, sink);
  if (ops_ok) warn_unused(spec, run, sink);
  if (m.ok("method") && m.ok("memory")) check_graph(spec, sink);
  if (ops_ok && m.ok("placement") && spec.workload == WorkloadKind::None) check_in_place(spec, sink);
  if (ops_ok && sizes_ok && dtypes_ok && m.ok("expect") && spec.workload == WorkloadKind::None)
    check_expectations(spec, sink);
  if (m.ok("expect") && spec.workload != WorkloadKind::None) check_workload_expectations(spec, sink);

  if (!m.usable() || sink.error_count() > errors_before) return std::nullopt;
  return spec;
}

}  // namespace commbench
