#include "experiment/model_field.h"

#include <array>
#include <limits>

#include <fmt/format.h>

#include "experiment/did_you_mean.h"

namespace commbench {
namespace {

// 2^48 (281 trillion) parameters or activations: a hundred times the largest models trained,
// and small enough that bytes (up to 24 per parameter with every optimizer state) and JSON
// numbers (exact to 2^53) stay exact.
constexpr int64_t kModelCountMax = int64_t{1} << 48;

std::optional<double> read_model_number(DiagnosticSink& sink, const toml::node& n, std::string_view key) {
  double x = 0;
  if (const auto* i = n.as_integer()) x = static_cast<double>(i->get());
  else if (const auto* f = n.as_floating_point()) x = f->get();
  else {
    report_wrong_type(sink, n, "a number", key);
    return std::nullopt;
  }
  if (!(x >= 0) || x > 1e30) {
    sink.error(sink.pos(n), fmt::format("'{}' must be a number ≥ 0, got {}", key, x));
    return std::nullopt;
  }
  return x;
}

std::optional<uint64_t> read_model_count(DiagnosticSink& sink, const toml::node& n, std::string_view key, int64_t min) {
  auto v = read_integer(sink, n, key, min, kModelCountMax);
  if (!v) return std::nullopt;
  return static_cast<uint64_t>(*v);
}

bool check_model_keys(DiagnosticSink& sink, const toml::table& t, std::span<const std::string_view> valid,
                std::string_view where) {
  const size_t before = sink.error_count();
  report_unknown_keys(sink, t, valid, where);
  return sink.error_count() == before;
}

std::optional<workload::Layer> read_model_layer(DiagnosticSink& sink, const toml::node& n, const std::string& key) {
  const auto* t = n.as_table();
  if (!t) {
    report_wrong_type(sink, n, "a table { name = \"fc1\", parameters = 1048576, activations = 4096, flops = 2.1e6 }", key);
    return std::nullopt;
  }
  static constexpr std::array<std::string_view, 4> kKeys{"name", "parameters", "activations", "flops"};
  bool ok = check_model_keys(sink, *t, kKeys, key);
  workload::Layer l;
  if (const auto* v = t->get("name")) {
    if (auto s = read_string(sink, *v, key + ".name")) l.name = *s;
    else ok = false;
  }
  if (const auto* v = t->get("parameters")) {
    if (auto p = read_model_count(sink, *v, key + ".parameters", 0)) l.parameters = *p;
    else ok = false;
  } else {
    sink.error(sink.pos(n), fmt::format("'{}' needs 'parameters' (the layer's trainable parameter count)", key));
    ok = false;
  }
  if (const auto* v = t->get("activations")) {
    if (auto a = read_model_count(sink, *v, key + ".activations", 0)) l.activations_per_sample = *a;
    else ok = false;
  }
  if (const auto* v = t->get("flops")) {
    if (auto f = read_model_number(sink, *v, key + ".flops")) l.forward_flops_per_sample = *f;
    else ok = false;
  }
  if (!ok) return std::nullopt;
  return l;
}

}  // namespace

std::optional<workload::Model> read_model(DiagnosticSink& sink, const toml::node& node, std::string_view key) {
  if (const auto* s = node.as_string()) {
    if (auto m = workload::model_preset(s->get())) return m;
    std::vector<std::string_view> names(workload::model_preset_names().begin(), workload::model_preset_names().end());
    sink.error(sink.pos(node), unknown_value("model preset", s->get(), names) +
                                   " (or describe the model: model = { parameters = 25557032, layers = 54 })");
    return std::nullopt;
  }
  const auto* t = node.as_table();
  if (!t) {
    report_wrong_type(sink, node, "a preset name (\"resnet50\") or a table", key);
    return std::nullopt;
  }
  const toml::node* layers = t->get("layers");
  if (!layers) {
    sink.error(sink.pos(node), fmt::format("'{}' needs 'layers': a list of layer tables, or a count with "
                                           "'parameters' ({{ parameters = 1000000, layers = 10 }})", key));
    return std::nullopt;
  }
  if (const auto* list = layers->as_array()) {
    static constexpr std::array<std::string_view, 1> kKeys{"layers"};
    bool ok = check_model_keys(sink, *t, kKeys, key);
    if (list->empty()) {
      sink.error(sink.pos(*layers), fmt::format("'{}.layers' is empty: give at least one layer", key));
      return std::nullopt;
    }
    workload::Model m{"custom", "layers listed in the experiment file", {}};
    uint64_t params = 0, activations = 0;  // each layer's ≤ 2^48: their sums cannot wrap before the check
    for (size_t i = 0; i < list->size(); ++i) {
      auto l = read_model_layer(sink, *list->get(i), fmt::format("{}.layers[{}]", key, i));
      if (!l) {
        ok = false;
        continue;
      }
      if (l->name.empty()) l->name = fmt::format("layer{}", i);
      params += l->parameters;
      activations += l->activations_per_sample;
      if (ok && (params > static_cast<uint64_t>(kModelCountMax) || activations > static_cast<uint64_t>(kModelCountMax))) {
        sink.error(sink.pos(*list->get(i)), fmt::format("'{}.layers' add up to more than 2^48 parameters or "
                                                        "activations per sample (by layer {})", key, i));
        ok = false;
      }
      m.layers.push_back(std::move(*l));
    }
    if (!ok) return std::nullopt;
    return m;
  }
  static constexpr std::array<std::string_view, 4> kKeys{"parameters", "layers", "activations", "flops"};
  bool ok = check_model_keys(sink, *t, kKeys, key);
  auto count = read_model_count(sink, *layers, fmt::format("{}.layers", key), 1);
  std::optional<uint64_t> params;
  if (const auto* p = t->get("parameters")) params = read_model_count(sink, *p, fmt::format("{}.parameters", key), 1);
  else sink.error(sink.pos(node), fmt::format("'{}' with a layer count needs 'parameters' (the total)", key));
  uint64_t activations = 0;
  double flops = 0;
  if (const auto* a = t->get("activations")) {
    auto v = read_model_count(sink, *a, fmt::format("{}.activations", key), 0);
    ok = ok && v;
    activations = v.value_or(0);
  }
  if (const auto* f = t->get("flops")) {
    auto v = read_model_number(sink, *f, fmt::format("{}.flops", key));
    ok = ok && v;
    flops = v.value_or(0);
  }
  if (!ok || !count || !params) return std::nullopt;
  if (*count > 100000) {
    sink.error(sink.pos(*layers), fmt::format("'{}.layers' = {} is more than 100000 layers", key, *count));
    return std::nullopt;
  }
  return workload::even_model(*params, static_cast<int>(*count), activations, flops);
}

}  // namespace commbench
