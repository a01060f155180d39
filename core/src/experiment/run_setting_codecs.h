// The codecs of the run-settings table (run_settings.cpp): how one kind of value is read from
// TOML, written to and read from JSON, and shown in the docs. Each codec:
// read(node, key, sink, where) -> optional<T>; to_json(T); from_json(json) -> T;
// text(T) -> the default as TOML. A new kind of setting value is a new codec here.
#pragma once

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "commbench/sdk/dtypes.hpp"
#include "common/cpu_binding_mode.h"
#include "experiment/did_you_mean.h"
#include "experiment/expect_field.h"
#include "experiment/list_field.h"
#include "experiment/model_field.h"
#include "experiment/run_setting_table.h"
#include "experiment/sizes.h"

namespace commbench::setting_codec {

using nlohmann::json;

inline constexpr int64_t kSettingIntMax = std::numeric_limits<int32_t>::max();

// An integer in [Min, Max].
template <int64_t Min, int64_t Max>
struct IntBetween {
  static std::optional<int> read(const toml::node& n, std::string_view key, DiagnosticSink& sink, WhereMap&) {
    auto v = read_integer(sink, n, key, Min, Max);
    if (!v) return std::nullopt;
    return static_cast<int>(*v);
  }
  static json to_json(int v) { return v; }
  static int from_json(const json& j) { return j.get<int>(); }
  static std::string text(int v) { return fmt::format("`{}`", v); }
};

template <int64_t Min>
using IntAtLeast = IntBetween<Min, kSettingIntMax>;

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

struct CpuBindingNames {
  static constexpr std::string_view what = "CPU binding";
  static std::vector<std::pair<CpuBinding, std::string_view>> all() {
    std::vector<std::pair<CpuBinding, std::string_view>> out;
    for (CpuBinding b : {CpuBinding::None, CpuBinding::Core, CpuBinding::Numa}) out.emplace_back(b, cpu_binding_name(b));
    return out;
  }
  static std::string_view name(CpuBinding b) { return cpu_binding_name(b); }
};

// gpu_timing, plus the value files from before issue 12 used for the method.
struct GpuClock : Named<TimingMethod, GpuTimingNames> {
  static std::optional<TimingMethod> read(const toml::node& n, std::string_view key, DiagnosticSink& sink,
                                          WhereMap& where) {
    if (const auto* s = n.as_string(); s && s->get() == kRetiredBatchClock) {
      sink.error(sink.pos(n),
                 "gpu_timing = \"cuda_event_batch\" is now two settings: write method = \"batch\" "
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

}  // namespace commbench::setting_codec
