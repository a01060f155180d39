#include "experiment/run_setting_table.h"

#include <algorithm>
#include <array>
#include <limits>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "experiment/did_you_mean.h"
#include "experiment/expect_field.h"
#include "experiment/list_field.h"
#include "experiment/model_field.h"
#include "experiment/sizes.h"

namespace commbench {
namespace {

using nlohmann::json;

constexpr int64_t kSettingIntMax = std::numeric_limits<int32_t>::max();

// How one kind of value is read from TOML, written to and read from JSON, and shown in the docs.
// Each codec: read(node, key, sink, where) -> optional<T>; to_json(T); from_json(json) -> T;
// text(T) -> the default as TOML.

template <int64_t Min>
struct IntAtLeast {
  static std::optional<int> read(const toml::node& n, std::string_view key, DiagnosticSink& sink, WhereMap&) {
    auto v = read_integer(sink, n, key, Min, kSettingIntMax);
    if (!v) return std::nullopt;
    return static_cast<int>(*v);
  }
  static json to_json(int v) { return v; }
  static int from_json(const json& j) { return j.get<int>(); }
  static std::string text(int v) { return fmt::format("`{}`", v); }
};

template <int64_t Min>
struct OptionalIntAtLeast {
  static std::optional<std::optional<int>> read(const toml::node& n, std::string_view key,
                                                DiagnosticSink& sink, WhereMap& where) {
    auto v = IntAtLeast<Min>::read(n, key, sink, where);
    if (!v) return std::nullopt;
    return std::optional<int>(*v);
  }
  static json to_json(const std::optional<int>& v) { return v ? json(*v) : json(nullptr); }
  static std::optional<int> from_json(const json& j) {
    if (j.is_null()) return std::nullopt;
    return j.get<int>();
  }
  static std::string text(const std::optional<int>& v) { return v ? fmt::format("`{}`", *v) : "unset"; }
};

template <bool ZeroAllowed>
struct Duration {
  static std::optional<double> read(const toml::node& n, std::string_view key, DiagnosticSink& sink, WhereMap&) {
    return read_duration(sink, n, key, ZeroAllowed);
  }
  static json to_json(double v) { return v; }
  static double from_json(const json& j) { return j.get<double>(); }
  static std::string text(double v) { return fmt::format("`{}`", v); }
};

struct Bool {
  static std::optional<bool> read(const toml::node& n, std::string_view key, DiagnosticSink& sink, WhereMap&) {
    return read_bool(sink, n, key);
  }
  static json to_json(bool v) { return v; }
  static bool from_json(const json& j) { return j.get<bool>(); }
  static std::string text(bool v) { return v ? "`true`" : "`false`"; }
};

// A string naming one value of an enumeration; `Names` lists (value, name) of the valid ones.
template <class T, class Names>
struct Named {
  static std::optional<T> read(const toml::node& n, std::string_view key, DiagnosticSink& sink, WhereMap&) {
    auto text = read_string(sink, n, key);
    if (!text) return std::nullopt;
    std::vector<std::string_view> valid;
    for (auto [value, name] : Names::all()) {
      if (name == *text) return value;
      valid.push_back(name);
    }
    sink.error(sink.pos(n), unknown_value(Names::what, *text, valid));
    return std::nullopt;
  }
  static json to_json(T v) { return std::string(Names::name(v)); }
  static T from_json(const json& j) {
    const std::string s = j.get<std::string>();
    for (auto [value, name] : Names::all())
      if (name == s) return value;
    throw std::runtime_error(fmt::format("unknown {} '{}' in the execution JSON", Names::what, s));
  }
  static std::string text(T v) { return fmt::format("`\"{}\"`", Names::name(v)); }
};

struct MemoryNames {
  static constexpr std::string_view what = "memory type";
  static std::vector<std::pair<cb_mem, std::string_view>> all() {
    std::vector<std::pair<cb_mem, std::string_view>> out;
    for (int i = 0; i < CB_MEM_COUNT_V1; ++i)
      out.emplace_back(static_cast<cb_mem>(i), sdk::mem_name(static_cast<cb_mem>(i)));
    return out;
  }
  static std::string_view name(cb_mem m) { return sdk::mem_name(m); }
};

// The clock of stream-ordered backends. `host` is what the worker falls back to for
// host-memory backends, not a choice in the file.
struct GpuTimingNames {
  static constexpr std::string_view what = "GPU clock";
  static std::vector<std::pair<TimingMethod, std::string_view>> all() {
    std::vector<std::pair<TimingMethod, std::string_view>> out;
    for (TimingMethod m : {TimingMethod::CudaEvent, TimingMethod::HostStreamSync})
      out.emplace_back(m, timing_name(m));
    return out;
  }
  static std::string_view name(TimingMethod m) { return timing_name(m); }
};

struct ScalingNames {
  static constexpr std::string_view what = "scaling mode";
  static std::vector<std::pair<ScalingMode, std::string_view>> all() {
    return {{ScalingMode::Weak, scaling_name(ScalingMode::Weak)},
            {ScalingMode::Strong, scaling_name(ScalingMode::Strong)}};
  }
  static std::string_view name(ScalingMode m) { return scaling_name(m); }
};

// gpu_timing, plus the value files from before issue 12 used for the method.
struct GpuClock : Named<TimingMethod, GpuTimingNames> {
  static std::optional<TimingMethod> read(const toml::node& n, std::string_view key, DiagnosticSink& sink,
                                          WhereMap& where) {
    if (const auto* s = n.as_string(); s && s->get() == kRetiredBatchClock) {
      sink.error(sink.pos(n),
                 "gpu_timing = \"cuda_event_batch\" is now two settings: write timing = \"batch\" "
                 "(the method; it is the default) and gpu_timing = \"cuda_event\" (the clock)");
      return std::nullopt;
    }
    return Named<TimingMethod, GpuTimingNames>::read(n, key, sink, where);
  }
};

struct MethodNames {
  static constexpr std::string_view what = "timing method";
  static std::vector<std::pair<MeasureMethod, std::string_view>> all() {
    std::vector<std::pair<MeasureMethod, std::string_view>> out;
    for (MeasureMethod m : {MeasureMethod::Batch, MeasureMethod::PerIteration, MeasureMethod::Graph})
      out.emplace_back(m, method_name(m));
    return out;
  }
  static std::string_view name(MeasureMethod m) { return method_name(m); }
};

struct AggregationNames {
  static constexpr std::string_view what = "rank aggregation";
  static std::vector<std::pair<RankAggregation, std::string_view>> all() {
    std::vector<std::pair<RankAggregation, std::string_view>> out;
    for (RankAggregation a : {RankAggregation::Avg, RankAggregation::Min, RankAggregation::Max, RankAggregation::Rank0})
      out.emplace_back(a, aggregation_name(a));
    return out;
  }
  static std::string_view name(RankAggregation a) { return aggregation_name(a); }
};

struct OptimizerNames {
  static constexpr std::string_view what = "optimizer";
  static std::vector<std::pair<workload::Optimizer, std::string_view>> all() {
    std::vector<std::pair<workload::Optimizer, std::string_view>> out;
    for (auto o : {workload::Optimizer::Sgd, workload::Optimizer::Momentum, workload::Optimizer::Adam})
      out.emplace_back(o, workload::optimizer_name(o));
    return out;
  }
  static std::string_view name(workload::Optimizer o) { return workload::optimizer_name(o); }
};

// A coefficient of variation, written as a fraction like the records' `cv`: [0, 1), 0 = off.
struct Fraction {
  static std::optional<double> read(const toml::node& n, std::string_view key, DiagnosticSink& sink, WhereMap&) {
    double x = 0;
    if (const auto* i = n.as_integer()) x = static_cast<double>(i->get());
    else if (const auto* f = n.as_floating_point()) x = f->get();
    else {
      report_wrong_type(sink, n, "a number (a fraction: 0.05 for 5 %)", key);
      return std::nullopt;
    }
    if (!(x >= 0 && x < 1)) {
      sink.error(sink.pos(n), fmt::format("'{}' must be a fraction in [0, 1) (0.05 for 5 %; 0 = off), got {}", key, x));
      return std::nullopt;
    }
    return x;
  }
  static json to_json(double v) { return v; }
  static double from_json(const json& j) { return j.get<double>(); }
  static std::string text(double v) { return fmt::format("`{}`", v); }
};

// Exactly two distinct ranks.
struct Peers {
  static std::optional<std::vector<int>> read(const toml::node& n, std::string_view key,
                                              DiagnosticSink& sink, WhereMap& where) {
    auto peers = read_list<int>(
        sink, n, ListKey{key, "peers", ListForm::Array, "an integer", "integers", ""}, where,
        [&](const toml::node& e, const std::string& k) { return IntAtLeast<0>::read(e, k, sink, where); },
        [](int r) { return fmt::format("rank {}", r); });
    if (peers && peers->size() != 2) {
      sink.error(sink.pos(n), fmt::format("'peers' must list exactly 2 ranks, got {}", peers->size()));
      return std::nullopt;
    }
    return peers;
  }
  static json to_json(const std::vector<int>& v) { return v; }
  static std::vector<int> from_json(const json& j) { return j.get<std::vector<int>>(); }
  static std::string text(const std::vector<int>& v) { return fmt::format("`[{}, {}]`", v.at(0), v.at(1)); }
};

// `expect`: conditions checked after the job (experiment/expect_field.h).
struct Expect {
  static std::optional<std::vector<Expectation>> read(const toml::node& n, std::string_view,
                                                      DiagnosticSink& sink, WhereMap&) {
    return read_expect(sink, n);
  }
  static json to_json(const std::vector<Expectation>& v) { return expect_to_json(v); }
  static std::vector<Expectation> from_json(const json& j) { return expect_from_json(j); }
  static std::string text(const std::vector<Expectation>&) { return "none"; }
};

// telemetry = true | false | "<interval>" (observe_settings.h): seconds, 0 = off.
struct TelemetryInterval {
  static std::optional<double> read(const toml::node& n, std::string_view, DiagnosticSink& sink, WhereMap&) {
    return read_telemetry(sink, n);
  }
  static json to_json(double v) { return v; }
  static double from_json(const json& j) { return j.get<double>(); }
  static std::string text(double v) { return v > 0 ? fmt::format("`\"{}s\"`", v) : "`false`"; }
};

// An optional table-valued setting read by `Read` (thermal_warmup, profiler); null in JSON when unset.
template <class T, std::optional<T> (*Read)(DiagnosticSink&, const toml::node&)>
struct OptionalTable {
  static std::optional<std::optional<T>> read(const toml::node& n, std::string_view, DiagnosticSink& sink, WhereMap&) {
    auto v = Read(sink, n);
    if (!v) return std::nullopt;
    return std::optional<T>(std::move(*v));
  }
  static json to_json(const std::optional<T>& v) { return v ? json(*v) : json(nullptr); }
  static std::optional<T> from_json(const json& j) {
    if (j.is_null()) return std::nullopt;
    return j.get<T>();
  }
  static std::string text(const std::optional<T>&) { return "off"; }
};

struct WorkloadNames {
  static constexpr std::string_view what = "workload";
  static std::vector<std::pair<WorkloadKind, std::string_view>> all() {
    return {{WorkloadKind::None, workload_name(WorkloadKind::None)},
            {WorkloadKind::DataParallel, workload_name(WorkloadKind::DataParallel)},
            {WorkloadKind::Memory, workload_name(WorkloadKind::Memory)}};
  }
  static std::string_view name(WorkloadKind k) { return workload_name(k); }
};

struct ShardingNames {
  static constexpr std::string_view what = "sharding";
  static std::vector<std::pair<Sharding, std::string_view>> all() {
    return {{Sharding::Ddp, sharding_name(Sharding::Ddp)}, {Sharding::Fsdp, sharding_name(Sharding::Fsdp)}};
  }
  static std::string_view name(Sharding s) { return sharding_name(s); }
};

struct ComputeNames {
  static constexpr std::string_view what = "compute source";
  static std::vector<std::pair<ComputeSource, std::string_view>> all() {
    return {{ComputeSource::Time, compute_source_name(ComputeSource::Time)},
            {ComputeSource::Flops, compute_source_name(ComputeSource::Flops)}};
  }
  static std::string_view name(ComputeSource c) { return compute_source_name(c); }
};

// `model`: a preset name or a table (experiment/model_field.h); null in JSON when unset.
struct ModelCodec {
  static std::optional<std::optional<workload::Model>> read(const toml::node& n, std::string_view key,
                                                            DiagnosticSink& sink, WhereMap&) {
    auto m = read_model(sink, n, key);
    if (!m) return std::nullopt;
    return std::optional<workload::Model>(std::move(*m));
  }
  static json to_json(const std::optional<workload::Model>& m) { return m ? workload::model_to_json(*m) : json(nullptr); }
  static std::optional<workload::Model> from_json(const json& j) {
    if (j.is_null()) return std::nullopt;
    return workload::model_from_json(j);
  }
  static std::string text(const std::optional<workload::Model>&) { return "unset"; }
};

// A size in bytes ("25MiB" or an integer), > 0.
struct ByteSize {
  static std::optional<uint64_t> read(const toml::node& n, std::string_view key, DiagnosticSink& sink, WhereMap&) {
    Parsed<SizeSpec> s = Parsed<SizeSpec>::fail("");
    if (auto i = n.value_exact<int64_t>()) s = size_from_integer(*i);
    else if (auto t = n.value_exact<std::string>()) s = parse_size(*t);
    else {
      report_wrong_type(sink, n, "a size (\"25MiB\" or bytes)", key);
      return std::nullopt;
    }
    if (!s) {
      sink.error(sink.pos(n), fmt::format("'{}': {}", key, s.error));
      return std::nullopt;
    }
    if (s.value->elements) {
      sink.error(sink.pos(n), fmt::format("'{}' is in bytes (\"25MiB\"), not elements", key));
      return std::nullopt;
    }
    return s.value->value;
  }
  static json to_json(uint64_t v) { return v; }
  static uint64_t from_json(const json& j) { return j.get<uint64_t>(); }
  static std::string text(uint64_t v) { return fmt::format("`\"{}\"`", format_size(v, false)); }
};

// batch_sizes: distinct integers ≥ 1, in the order written.
struct BatchSizeList {
  static std::optional<std::vector<int>> read(const toml::node& n, std::string_view key, DiagnosticSink& sink,
                                              WhereMap& where) {
    return read_list<int>(
        sink, n, ListKey{key, "batch_sizes", ListForm::Array, "an integer ≥ 1", "integers", ""}, where,
        [&](const toml::node& e, const std::string& k) { return IntAtLeast<1>::read(e, k, sink, where); },
        [](int b) { return fmt::format("batch size {}", b); });
  }
  static json to_json(const std::vector<int>& v) { return v; }
  static std::vector<int> from_json(const json& j) { return j.get<std::vector<int>>(); }
  static std::string text(const std::vector<int>&) { return "`[batch_size]`"; }
};

// A boolean or an array of distinct booleans: the values a case is run with.
struct BoolChoices {
  static std::optional<std::vector<bool>> read(const toml::node& n, std::string_view key, DiagnosticSink& sink, WhereMap&) {
    if (const auto* b = n.as_boolean()) return std::vector<bool>{b->get()};
    const auto* a = n.as_array();
    if (!a || a->empty()) {
      report_wrong_type(sink, n, "a boolean or a non-empty array of booleans ([true, false])", key);
      return std::nullopt;
    }
    std::vector<bool> out;
    for (size_t i = 0; i < a->size(); ++i) {
      auto v = read_bool(sink, *a->get(i), fmt::format("{}[{}]", key, i));
      if (!v) return std::nullopt;
      if (std::find(out.begin(), out.end(), *v) != out.end()) {
        sink.error(sink.pos(*a->get(i)), fmt::format("'{}' lists {} twice", key, *v));
        return std::nullopt;
      }
      out.push_back(*v);
    }
    return out;
  }
  static json to_json(const std::vector<bool>& v) { return v; }
  static std::vector<bool> from_json(const json& j) { return j.get<std::vector<bool>>(); }
  static std::string text(const std::vector<bool>& v) {
    std::string out;
    for (bool b : v) out += std::string(out.empty() ? "" : ", ") + (b ? "true" : "false");
    return fmt::format("`[{}]`", out);
  }
};

// A number ≥ 0 (milliseconds and the like).
struct NonNegativeNumber {
  static std::optional<double> read(const toml::node& n, std::string_view key, DiagnosticSink& sink, WhereMap&) {
    double x = 0;
    if (const auto* i = n.as_integer()) x = static_cast<double>(i->get());
    else if (const auto* f = n.as_floating_point()) x = f->get();
    else {
      report_wrong_type(sink, n, "a number ≥ 0", key);
      return std::nullopt;
    }
    if (!(x >= 0) || x > 1e9) {
      sink.error(sink.pos(n), fmt::format("'{}' must be a number in [0, 1e9], got {}", key, x));
      return std::nullopt;
    }
    return x;
  }
  static json to_json(double v) { return v; }
  static double from_json(const json& j) { return j.get<double>(); }
  static std::string text(double v) { return fmt::format("`{}`", v); }
};

// A row for member `M` read with codec `C`. `default_words` replaces the generated default in
// the docs where the built-in value is not the whole story ("sized per execution").
template <auto M, class C>
constexpr RunSetting row(std::string_view key, std::string_view json_key, std::string_view type,
                         std::string_view meaning) {
  return RunSetting{
      key, json_key, type, meaning,
      [](const toml::node& n, std::string_view k, DiagnosticSink& sink, WhereMap& where, RunSettings& to) {
        where[std::string(k)] = sink.pos(n);
        auto v = C::read(n, k, sink, where);
        if (!v) return false;
        to.*M = std::move(*v);
        return true;
      },
      [](const RunSettings& from, RunSettings& to) { to.*M = from.*M; },
      [](const RunSettings& from) { return C::to_json(from.*M); },
      [](const json& from, RunSettings& to) { to.*M = C::from_json(from); },
      [] { return C::text(RunSettings{}.*M); },
      {}};
}

constexpr RunSetting with_default(RunSetting r, std::string_view words) {
  r.default_words = words;
  return r;
}

const std::array kSettings{
    row<&RunSettings::memory, Named<cb_mem, MemoryNames>>(
        "memory", "memory", "string",
        "buffer memory: `host` (pageable), `host_pinned` (page-locked), `cuda` (device memory; a "
        "host-memory backend such as Gloo gets it staged through pinned host buffers, copies timed "
        "— docs/gpu.md)"),
    row<&RunSettings::warmup, IntAtLeast<0>>("warmup", "warmup", "integer ≥ 0",
                                             "untimed iterations before the timed ones, for every case"),
    row<&RunSettings::iterations, IntAtLeast<1>>(
        "iterations", "iterations", "integer ≥ 1",
        "timed iterations per case (a minimum when `min_time` is set; one round's worth with "
        "`target_cv`)"),
    with_default(row<&RunSettings::min_time_s, Duration<true>>(
                     "min_time", "min_time_s", "duration",
                     "keep iterating a case until it has run at least this long"),
                 "`0` (off)"),
    row<&RunSettings::max_iterations, IntAtLeast<1>>(
        "max_iterations", "max_iterations", "integer ≥ `iterations`",
        "upper bound on timed iterations when `min_time` or `target_cv` is set"),
    row<&RunSettings::check, Bool>("check", "check", "boolean",
                                   "verify every result; a mismatch fails the job"),
    with_default(
        row<&RunSettings::timeout_s, Duration<false>>(
            "timeout", "timeout_s", "duration > 0",
            "wall-clock limit of one execution (all its phases: start-up, rendezvous, communicator "
            "creation, every case, finalisation); past it the run fails, naming the rank and phase. "
            "Unset: 10 minutes plus, per case, (warm-up + iterations + 1) × (10 ms + the bytes a rank "
            "moves at a pessimistic 50 MB/s) plus twice `min_time` — so a 1 GiB sweep is not cut "
            "short by a limit meant for kilobytes"),
        "sized per execution"),
    row<&RunSettings::root, IntAtLeast<0>>(
        "root", "root", "integer ≥ 0",
        "root rank of broadcast, reduce, gather, scatter; must be < every world size"),
    row<&RunSettings::window, IntAtLeast<1>>(
        "window", "window", "integer ≥ 1",
        "unidir_bw, bidir_bw, msg_rate: messages in flight before the receiver acknowledges"),
    row<&RunSettings::peers, Peers>(
        "peers", "peers", "array of 2 distinct integers ≥ 0",
        "pingpong, unidir_bw and bidir_bw: the two ranks; each < every world size"),
    with_default(
        row<&RunSettings::device, OptionalIntAtLeast<0>>(
            "device", "device", "integer ≥ 0",
            "`memory = \"cuda\"`: the GPU (index among the visible ones) every rank of the run "
            "uses; unset, the binding rule of docs/gpu.md applies (local rank; device 0 when the "
            "launcher pinned one device per rank with `CUDA_VISIBLE_DEVICES`)"),
        "by local rank"),
    row<&RunSettings::method, Named<MeasureMethod, MethodNames>>(
        "timing", "timing", "string",
        "the method (docs/metrics.md, \"Methods\"): `batch` — one synchronisation, then the "
        "iterations back to back, per rank elapsed / N (nccl-tests', OSU's and PARAM's method); "
        "`per_iteration` — a synchronised start before every iteration, slowest rank per iteration "
        "(the latency of an isolated collective); `graph` — `memory = \"cuda\"` on a stream-ordered "
        "backend whose posts can be captured (NCCL): the iterations captured into one CUDA graph and "
        "launched once (nccl-tests `-G`); collectives only, other cases are `unsupported` with the "
        "reason"),
    row<&RunSettings::rank_aggregation, Named<RankAggregation, AggregationNames>>(
        "rank_aggregation", "rank_aggregation", "string",
        "`batch` and `graph`: how the ranks' times become one — `avg` (mean over ranks of "
        "elapsed / N, nccl-tests' default), `min`, `max` (the rank with the smallest / largest), "
        "`rank0` (nccl-tests `-a 0/1/2/3`). Point-to-point patterns report their first peer's "
        "clock, as OSU. `per_iteration` always takes the slowest rank of each iteration (writing "
        "this key with it is a warning)"),
    with_default(row<&RunSettings::target_cv, Fraction>(
                     "target_cv", "target_cv", "number in [0, 1)",
                     "repeat a case in rounds of `iterations` until the coefficient of variation of "
                     "its samples is below this fraction (`0.05` = 5 %), capped by `max_iterations` "
                     "and `max_time`; records say `target_cv` and `cv_reached`, the summary counts "
                     "the misses"),
                 "`0` (off)"),
    with_default(row<&RunSettings::max_time_s, Duration<false>>(
                     "max_time", "max_time_s", "duration > 0",
                     "with `target_cv`: no new round after a case has been measured this long"),
                 "`\"10s\"`"),
    row<&RunSettings::gpu_timing, GpuClock>(
        "gpu_timing", "gpu_timing", "string",
        "the **clock** of a stream-ordered backend (NCCL) on `memory = \"cuda\"`: `cuda_event` "
        "(events on the worker's stream), `host_stream_sync` (host timer, a stream synchronisation "
        "ending each iteration). Host-memory and staged backends are timed on the host whatever "
        "this says. The method is `timing`: the former `gpu_timing = \"cuda_event_batch\"` is an "
        "error that says to write `timing = \"batch\"` (the default) with `gpu_timing = "
        "\"cuda_event\"`. docs/gpu.md"),
    row<&RunSettings::scaling, Named<ScalingMode, ScalingNames>>(
        "scaling", "scaling", "string",
        "how `sizes` scale with `world_sizes`: `weak` (each rank's message is the size written, at "
        "every world size) or `strong` (the size written is the job's total — what nccl-tests "
        "prints for allgather, reducescatter, alltoall, gather and scatter — divided among the "
        "ranks). With `workload = \"data_parallel\"`: `weak` keeps `batch_size` per rank, `strong` "
        "makes it the global batch split among the ranks (docs/workloads.md). Either way, a run with "
        "several world sizes gets a scaling-efficiency table (docs/metrics.md)"),
    row<&RunSettings::trace, Bool>(
        "trace", "trace", "boolean",
        "each rank records a Chrome trace (phases, every timed iteration, every `all_pairs` "
        "transfer), written after each case to `trace/exec<N>-rank<R>.json` and merged at the end "
        "into `trace.json` on rank 0's timeline; nothing is recorded when off. docs/observability.md"),
    row<&RunSettings::expect, Expect>(
        "expect", "expect", "table or array of tables",
        "performance the run must reach, checked after the job: see [Expectations](#expectations)"),
    row<&RunSettings::optimizer, Named<workload::Optimizer, OptimizerNames>>(
        "optimizer", "optimizer", "string",
        "the optimizer whose state the memory figures count (docs/workloads.md, \"Memory\"): `sgd` "
        "(none), `momentum` (one fp32 value per parameter), `adam` (two); a 16-bit `dtype` adds the "
        "fp32 master weights, so 16-bit `adam` is ZeRO's 16 bytes per parameter"),
    row<&RunSettings::telemetry_s, TelemetryInterval>(
        "telemetry", "telemetry_s", "boolean or duration ≥ 10ms",
        "the agent samples CPU frequency, temperatures, RAPL power, load, NIC counters and (NVML) GPU "
        "temperature/power/clocks/throttle reasons/utilisation every interval (`true` = every `1s`) "
        "into `telemetry.csv`, and each case record gets a `telemetry` summary. Sampled by the agent, "
        "never inside the timed workers. [observability.md](observability.md#telemetry)"),
    row<&RunSettings::thermal_warmup, OptionalTable<ThermalWarmup, read_thermal_warmup>>(
        "thermal_warmup", "thermal_warmup", "duration, or `{ temperature_c = 50, timeout = \"10min\", idle = \"30s\" }`",
        "before an execution, load the devices (every CPU, and with `memory = \"cuda\"` every GPU) "
        "for the duration, or until they reach `temperature_c` (GPUs through NVML, else the CPU "
        "through hwmon) or `timeout` passes (default 10 min); repeated after an idle gap longer than "
        "`idle` (duration form) or whenever the devices cooled below the target. Recorded in "
        "`summary.json`. [observability.md](observability.md#thermal-warm-up)"),
    row<&RunSettings::profiler, OptionalTable<ProfilerSetting, read_profiler>>(
        "profiler", "profiler", "string or table",
        "wrap workers in a profiler: `\"perf\"`, `\"nsys\"`, `\"ncu\"`, or a command template "
        "(`\"strace -f -o {output}.strace\"`); table form `{ tool = \"nsys\", ranks = [0] }` or "
        "`{ command = \"...\", ranks = [...] }` to wrap only some ranks (all by default). Outputs "
        "land next to the rank's log; a missing program is a validation error. "
        "[observability.md](observability.md#profilers)"),
    row<&RunSettings::workload, Named<WorkloadKind, WorkloadNames>>(
        "workload", "workload", "string",
        "`\"data_parallel\"`: instead of op cases, play data-parallel training steps of `model` "
        "(gradient buckets or FSDP collectives, with compute that really runs) and record step "
        "time, compute, communication, exposed communication, overlap efficiency and samples/s; "
        "`ops` and `sizes` are then not used. `\"memory\"`: no steps; per batch size (`batch_sizes`) "
        "the model's parameters, gradients, optimizer state and activations are allocated for real "
        "in `memory`, touched and measured (host RSS; `cudaMemGetInfo` on a GPU) next to the "
        "computed figures, one `memory` record each. [workloads.md](workloads.md)"),
    row<&RunSettings::model, ModelCodec>(
        "model", "model", "string or table",
        "the workload's model: a preset (`resnet50`, `bert_large`, `gpt2_xl`), `{ layers = [ { name "
        "= \"fc1\", parameters = 1048576, activations = 4096, flops = 2.1e6 }, ... ] }` (forward "
        "order; activations in elements and forward FLOPs per sample), or `{ parameters = N, layers "
        "= L }` split evenly. Required with `workload`"),
    row<&RunSettings::batch_size, IntAtLeast<1>>("batch_size", "batch_size", "integer ≥ 1",
                                                 "workload: samples per rank per step; with `scaling = \"strong\"` "
                                                 "the global batch, split evenly among the ranks (each world size "
                                                 "must divide it)"),
    with_default(row<&RunSettings::batch_sizes, BatchSizeList>(
                     "batch_sizes", "batch_sizes", "array of integers ≥ 1",
                     "`workload = \"memory\"`: the batch sizes per rank to measure, one `memory` record "
                     "each ([workloads.md](workloads.md#memory))"),
                 "`[batch_size]`"),
    row<&RunSettings::bucket_bytes, ByteSize>(
        "bucket_size", "bucket_bytes", "size",
        "workload, `sharding = \"ddp\"`: gradient bucket cap; layers fill buckets in reverse "
        "order (torch DDP's `bucket_cap_mb`), each bucket one allreduce in `dtype`"),
    row<&RunSettings::sharding, Named<Sharding, ShardingNames>>(
        "sharding", "sharding", "string",
        "workload: `ddp` (gradients allreduced in buckets) or `fsdp` (per layer: allgather of the "
        "parameters before its forward and its backward, reducescatter of its gradients after "
        "its backward)"),
    row<&RunSettings::overlap, BoolChoices>(
        "overlap", "overlap", "boolean or array of booleans",
        "workload: `true` posts each bucket's reduction as soon as its layers' backward is done, "
        "while backward continues; `false` reduces after the whole backward. One record per value"),
    row<&RunSettings::steps, IntAtLeast<1>>("steps", "steps", "integer ≥ 1",
                                            "workload: timed steps per case (after `warmup` steps)"),
    row<&RunSettings::compute_ms, NonNegativeNumber>(
        "compute_ms", "compute_ms", "number ≥ 0",
        "workload, `compute = \"time\"`: compute per step in milliseconds (forward + backward), "
        "split over the layers by their FLOPs (forward ⅓, backward ⅔); `0`: communication only. "
        "With `scaling = \"strong\"` the compute of the global batch on one rank: each of N ranks "
        "computes `compute_ms / N`"),
    row<&RunSettings::compute, Named<ComputeSource, ComputeNames>>(
        "compute", "compute", "string",
        "workload: `time` (`compute_ms`) or `flops` (each layer's FLOPs × `batch_size`, forward "
        "and 2× for backward, at the rate measured on the rank's device before the steps; the rate "
        "is recorded)"),
};

constexpr std::array<RunKeyDoc, 10> kStructural{{
    {"name", "string", "`\"run<index>\"` (0-based: `run0`, `run1`, …)",
     "unique among the runs; not allowed in `[defaults]`"},
    {"backends", "array of strings", "**required**",
     "plugin names, e.g. `[\"gloo\"]`; several backends get the same cases and are compared side "
     "by side. `backend = \"gloo\"` is the same as `backends = [\"gloo\"]`"},
    {"ops", "array of strings", "**required** unless `workload` is set", "see [Ops](#ops). `op = \"allreduce\"` for one"},
    {"sizes", "array of sizes, or `{ min, max, factor }`", "**required** unless the only op is `barrier` or `workload` is set",
     "message sizes per rank, see [Sizes](#sizes)"},
    {"dtypes", "array of strings", "`[\"f32\"]`",
     "element types, see [Dtypes](#dtypes). `dtype = \"f32\"` for one"},
    {"redops", "array of strings", "`[\"sum\"]`",
     "reduce ops for reductions: `sum`, `prod`, `min`, `max`, `avg`. `redop = \"sum\"` for one"},
    {"placement", "string or array of strings", "`[\"out_of_place\"]`",
     "`out_of_place` (distinct send and receive buffers) and/or `in_place` (NCCL's in-place layouts)"},
    {"world_sizes", "array of integers ≥ 1", "`[2]`",
     "ranks to start; each value is a separate execution of the run. `world_size = 4` for one"},
    {"env", "table", "`{}`",
     "environment variables of the worker processes, see [Env and options](#env-and-options)"},
    {"options", "table of tables", "`{}`", "per-backend options, e.g. `[run.options.gloo]`"},
}};

}  // namespace

std::span<const RunSetting> run_settings() { return kSettings; }

const RunSetting* find_run_setting(std::string_view key) {
  for (const RunSetting& s : kSettings)
    if (s.key == key) return &s;
  return nullptr;
}

std::span<const RunKeyDoc> structural_run_keys() { return kStructural; }

void settings_to_json(const RunSettings& s, nlohmann::json& j) {
  for (const RunSetting& row : kSettings) j[std::string(row.json_key)] = row.to_json(s);
}

void settings_from_json(const nlohmann::json& j, RunSettings& s) {
  for (const RunSetting& row : kSettings)
    if (auto it = j.find(row.json_key); it != j.end()) row.from_json(*it, s);
}

std::string default_text(const RunSetting& s) {
  return s.default_words.empty() ? s.default_text() : std::string(s.default_words);
}

std::string run_keys_markdown() {
  std::string out = "| key | type | default | meaning |\n|---|---|---|---|\n";
  for (const RunKeyDoc& k : kStructural)
    out += fmt::format("| `{}` | {} | {} | {} |\n", k.key, k.type, k.default_text, k.meaning);
  for (const RunSetting& s : kSettings)
    out += fmt::format("| `{}` | {} | {} | {} |\n", s.key, s.type, default_text(s), s.meaning);
  return out;
}

}  // namespace commbench
