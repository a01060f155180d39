#include "experiment/expect_field.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "experiment/did_you_mean.h"
#include "experiment/list_field.h"
#include "experiment/sizes.h"

namespace commbench {
namespace {

// Kept in step with METRICS in python/commbench/expect.py, which evaluates them.
constexpr std::array<std::string_view, 6> kMetrics{"busbw_gbps",  "algbw_gbps",  "time_us",
                                                   "time_us_p50", "time_us_p99", "msg_rate_mps"};
constexpr std::array<std::string_view, 5> kScopeKeys{"op", "ops", "min_size", "max_size", ""};

std::vector<std::string_view> valid_keys() {
  std::vector<std::string_view> v(kMetrics.begin(), kMetrics.end());
  for (auto k : kScopeKeys)
    if (!k.empty()) v.push_back(k);
  return v;
}

std::optional<std::string> condition(DiagnosticSink& sink, const toml::node& node,
                                     std::string_view key) {
  static const std::regex re(R"(^\s*(>=|<=|>|<)\s*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)\s*$)");
  auto text = read_string(sink, node, key);
  if (!text) return std::nullopt;
  std::smatch m;
  if (!std::regex_match(*text, m, re)) {
    sink.error(sink.pos(node), fmt::format("'{}' = \"{}\" is not a condition: write a comparison "
                                           "and a number, e.g. \">= 180\" or \"<= 25.5\"",
                                           key, *text));
    return std::nullopt;
  }
  // "1e400" matches the pattern but reads as infinity, a bound nothing meets or everything does.
  if (!std::isfinite(std::strtod(m[2].str().c_str(), nullptr))) {
    sink.error(sink.pos(node), fmt::format("'{}' = \"{}\": {} is beyond the range of a double; write a finite bound",
                                           key, *text, m[2].str()));
    return std::nullopt;
  }
  return fmt::format("{} {}", m[1].str(), m[2].str());
}

std::optional<uint64_t> size_bytes(DiagnosticSink& sink, const toml::node& node, std::string_view key) {
  Parsed<SizeSpec> s = Parsed<SizeSpec>::fail("");
  if (auto i = node.value_exact<int64_t>()) s = size_from_integer(*i);
  else if (auto t = node.value_exact<std::string>()) s = parse_size(*t);
  else {
    report_wrong_type(sink, node, "a size (\"1MiB\" or bytes)", key);
    return std::nullopt;
  }
  if (!s) {
    sink.error(sink.pos(node), fmt::format("'{}': {}", key, s.error));
    return std::nullopt;
  }
  if (s.value->elements) {
    sink.error(sink.pos(node), fmt::format("'{}' is in bytes here (\"1MiB\"), not elements", key));
    return std::nullopt;
  }
  return s.value->value;
}

std::optional<OpKind> op_name(DiagnosticSink& sink, const toml::node& node, std::string_view key) {
  auto text = read_string(sink, node, key);
  if (!text) return std::nullopt;
  if (auto op = parse_op_kind(*text)) return op;
  std::vector<std::string_view> names;
  for (const auto& o : all_ops()) names.push_back(o.name);
  std::string hint = did_you_mean(*text, names);
  sink.error(sink.pos(node), fmt::format("unknown op '{}' in '{}'{}", *text, key,
                                         hint.empty() ? "" : hint));
  return std::nullopt;
}

std::optional<Expectation> one(DiagnosticSink& sink, const toml::node& node, std::string_view where) {
  const toml::table* t = node.as_table();
  if (!t) {
    report_wrong_type(sink, node, "a table such as { busbw_gbps = \">= 180\" }", where);
    return std::nullopt;
  }
  const auto valid = valid_keys();
  report_unknown_keys(sink, *t, valid, "'expect'");
  Expectation e;
  e.pos = sink.pos(node);
  bool ok = true;
  // As in a run (the same list reader): `op` one name, `ops` a non-empty list without repeats,
  // not both (they were merged silently into one list).
  const bool both = t->contains("op") && t->contains("ops");
  if (both) {
    sink.error(sink.pos(*t->get("ops")), "'expect': both 'op' and 'ops' are given: keep one");
    ok = false;
  }
  for (auto&& [k, v] : *t) {
    const std::string key(k.str());
    if (key == "op" || key == "ops") {
      if (both) continue;
      const bool plural = key == "ops";
      const ListKey spec{plural ? "ops" : "op", "ops", plural ? ListForm::Array : ListForm::Scalar,
                         "a string (an op name)", "strings (op names)", plural ? "op" : "ops"};
      WhereMap where;  // element positions are needed only while reading
      auto ops = read_list<OpKind>(
          sink, v, spec, where, [&](const toml::node& el, const std::string& el_key) { return op_name(sink, el, el_key); },
          [](OpKind op) { return fmt::format("'{}'", op_info(op).name); });
      if (ops) e.ops = std::move(*ops);
      else ok = false;
    } else if (key == "min_size" || key == "max_size") {
      auto b = size_bytes(sink, v, key);
      if (!b) ok = false;
      (key == "min_size" ? e.min_bytes : e.max_bytes) = b;
    } else if (std::find(kMetrics.begin(), kMetrics.end(), key) != kMetrics.end()) {
      if (auto c = condition(sink, v, key)) e.conditions.emplace_back(key, *c);
      else ok = false;
    } else {
      ok = false;  // reported by report_unknown_keys
    }
  }
  if (e.min_bytes && e.max_bytes && *e.min_bytes > *e.max_bytes) {
    sink.error(e.pos, "'expect': min_size is larger than max_size");
    ok = false;
  }
  if (ok && e.conditions.empty()) {
    sink.error(e.pos, fmt::format("'expect' names no metric: add one of {} with a condition, "
                                  "e.g. busbw_gbps = \">= 180\"",
                                  fmt::join(kMetrics, ", ")));
    ok = false;
  }
  if (!ok) return std::nullopt;
  return e;
}

}  // namespace

std::span<const std::string_view> expect_metrics() { return kMetrics; }

std::optional<std::vector<Expectation>> read_expect(DiagnosticSink& sink, const toml::node& node) {
  std::vector<Expectation> out;
  bool ok = true;
  if (const toml::array* a = node.as_array()) {
    for (size_t i = 0; i < a->size(); ++i) {
      if (auto e = one(sink, (*a)[i], fmt::format("expect[{}]", i))) out.push_back(std::move(*e));
      else ok = false;
    }
  } else if (auto e = one(sink, node, "expect")) {
    out.push_back(std::move(*e));
  } else {
    ok = false;
  }
  if (!ok) return std::nullopt;
  return out;
}

nlohmann::json expect_to_json(const std::vector<Expectation>& expect) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : expect) {
    nlohmann::json j = nlohmann::json::object();
    if (!e.ops.empty()) {
      j["ops"] = nlohmann::json::array();
      for (OpKind o : e.ops) j["ops"].push_back(std::string(op_info(o).name));
    }
    if (e.min_bytes) j["min_bytes"] = *e.min_bytes;
    if (e.max_bytes) j["max_bytes"] = *e.max_bytes;
    for (const auto& [metric, cond] : e.conditions) j[metric] = cond;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<Expectation> expect_from_json(const nlohmann::json& j) {
  std::vector<Expectation> out;
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    Expectation x;
    for (const auto& [k, v] : e.items()) {
      if (k == "ops") {
        for (const auto& o : v)
          if (auto op = parse_op_kind(o.get<std::string>())) x.ops.push_back(*op);
      } else if (k == "min_bytes") {
        x.min_bytes = v.get<uint64_t>();
      } else if (k == "max_bytes") {
        x.max_bytes = v.get<uint64_t>();
      } else if (v.is_string()) {
        x.conditions.emplace_back(k, v.get<std::string>());
      }
    }
    out.push_back(std::move(x));
  }
  return out;
}

}  // namespace commbench
