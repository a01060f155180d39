#include "experiment/toml_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

#include <fmt/format.h>

#include "common/console_text.h"
#include "experiment/did_you_mean.h"
#include "experiment/durations.h"

namespace commbench {

void DiagnosticSink::name_node(const toml::node& node, const std::string& label) {
  named_[&node] = label;
  if (const auto* t = node.as_table())
    for (auto&& [k, v] : *t) name_node(v, label);
  if (const auto* a = node.as_array())
    for (const auto& v : *a) name_node(v, label);
}

SourcePos DiagnosticSink::pos(const toml::node& node, const SourcePos& fallback) const {
  if (auto it = named_.find(&node); it != named_.end()) return SourcePos{it->second, 0, 0};
  const auto& begin = node.source().begin;
  if (begin.line == 0) return fallback.file.empty() ? SourcePos{file_, 0, 0} : fallback;
  return SourcePos{file_, static_cast<int>(begin.line), static_cast<int>(begin.column)};
}

SourcePos DiagnosticSink::pos(const toml::source_region& region) const {
  // A key from `--set` (experiment/overrides.h) carries the override as its source path.
  if (region.path && *region.path != file_) return SourcePos{*region.path, 0, 0};
  return SourcePos{file_, static_cast<int>(region.begin.line), static_cast<int>(region.begin.column)};
}

void DiagnosticSink::error(SourcePos pos, std::string message) {
  diags_.push_back(Diagnostic{Diagnostic::Severity::Error, std::move(pos), std::move(message)});
}

void DiagnosticSink::warning(SourcePos pos, std::string message) {
  diags_.push_back(Diagnostic{Diagnostic::Severity::Warning, std::move(pos), std::move(message)});
}

bool DiagnosticSink::has_errors() const { return commbench::has_errors(diags_); }

size_t DiagnosticSink::error_count() const {
  return static_cast<size_t>(std::count_if(diags_.begin(), diags_.end(), [](const Diagnostic& d) {
    return d.severity == Diagnostic::Severity::Error;
  }));
}

std::vector<Diagnostic> DiagnosticSink::take_sorted() {
  std::stable_sort(diags_.begin(), diags_.end(), [](const Diagnostic& a, const Diagnostic& b) {
    return std::tie(a.pos.line, a.pos.column) < std::tie(b.pos.line, b.pos.column);
  });
  std::vector<Diagnostic> out;
  std::set<std::string> seen;
  for (auto& d : diags_)
    if (seen.insert(d.format()).second) out.push_back(std::move(d));
  diags_.clear();
  return out;
}

std::string_view type_phrase(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

void report_wrong_type(DiagnosticSink& sink, const toml::node& node, std::string_view expected,
                       std::string_view key, std::string_view hint) {
  sink.error(sink.pos(node),
             fmt::format("expected {} for '{}', got {}{}", expected, key, type_phrase(node), hint));
}

void report_unknown_keys(DiagnosticSink& sink, const toml::table& table,
                         std::span<const std::string_view> valid, std::string_view where) {
  for (auto&& [key, value] : table) {
    if (std::find(valid.begin(), valid.end(), key.str()) != valid.end()) continue;
    const SourcePos at = key.source().begin.line > 0 ? sink.pos(key.source()) : sink.pos(value);
    sink.error(at, fmt::format("unknown key '{}' in {}{}", key.str(), where,
                               did_you_mean(key.str(), valid)));
  }
}

std::optional<std::string> read_string(DiagnosticSink& sink, const toml::node& node,
                                       std::string_view key) {
  if (const auto* s = node.as_string()) return s->get();
  report_wrong_type(sink, node, "a string", key);
  return std::nullopt;
}

std::optional<std::string> read_name_text(DiagnosticSink& sink, const toml::node& node,
                                          std::string_view key) {
  auto text = read_string(sink, node, key);
  if (!text) return text;
  // C1 controls (U+0085 NEL, U+009B CSI), line separators and bidirectional overrides too: a
  // byte check below 0x20 let them through to the console.
  if (const auto c = first_unprintable(*text)) {
    sink.error(sink.pos(node), fmt::format("'{}' holds a control character ({}): names head tables and console "
                                           "lines, so use printable characters only",
                                           key, describe_code_point(*c)));
    return std::nullopt;
  }
  return text;
}

std::optional<bool> read_bool(DiagnosticSink& sink, const toml::node& node, std::string_view key) {
  if (const auto* b = node.as_boolean()) return b->get();
  report_wrong_type(sink, node, "a boolean (true or false)", key);
  return std::nullopt;
}

std::optional<int64_t> read_integer(DiagnosticSink& sink, const toml::node& node,
                                    std::string_view key, int64_t min, int64_t max) {
  const auto* i = node.as_integer();
  if (!i) {
    report_wrong_type(sink, node, "an integer", key);
    return std::nullopt;
  }
  const int64_t v = i->get();
  if (v < min) {
    sink.error(sink.pos(node), fmt::format("'{}' must be at least {}, got {}", key, min, v));
    return std::nullopt;
  }
  if (v > max) {
    sink.error(sink.pos(node), fmt::format("'{}' must be at most {}, got {}", key, max, v));
    return std::nullopt;
  }
  return v;
}

std::optional<double> read_duration(DiagnosticSink& sink, const toml::node& node,
                                    std::string_view key, bool zero_allowed) {
  double seconds = 0;
  if (const auto* i = node.as_integer()) {
    seconds = static_cast<double>(i->get());
  } else if (const auto* f = node.as_floating_point()) {
    seconds = f->get();
  } else if (const auto* s = node.as_string()) {
    auto parsed = parse_duration(s->get());
    if (!parsed) {
      sink.error(sink.pos(node), fmt::format("bad value for '{}': {}", key, parsed.error));
      return std::nullopt;
    }
    seconds = *parsed.value;
  } else {
    report_wrong_type(sink, node, "a duration (e.g. \"500ms\") or a number of seconds", key);
    return std::nullopt;
  }
  if (std::isnan(seconds) || std::isinf(seconds)) {
    sink.error(sink.pos(node), fmt::format("'{}' must be a finite number of seconds, got {}{}", key,
                                           seconds, std::isnan(seconds) ? "" : " (infinity)"));
    return std::nullopt;
  }
  if (seconds > kMaxDurationS) {
    sink.error(sink.pos(node), fmt::format("'{}' must be at most {} seconds (7 days), got {} seconds",
                                           key, kMaxDurationS, seconds));
    return std::nullopt;
  }
  const bool in_range = zero_allowed ? seconds >= 0 : seconds > 0;
  if (!in_range) {
    const char* bound = zero_allowed ? "at least 0" : "greater than 0";
    sink.error(sink.pos(node), fmt::format("'{}' must be {} seconds, got {}", key, bound, seconds));
    return std::nullopt;
  }
  return seconds;
}

std::optional<std::string> read_scalar_as_text(DiagnosticSink& sink, const toml::node& node,
                                               std::string_view key) {
  if (const auto* s = node.as_string()) {
    // Environment variables and backend options travel as C strings: a NUL would cut the value
    // the worker sees short of the one recorded.
    if (s->get().find('\0') != std::string::npos) {
      sink.error(sink.pos(node), fmt::format("'{}' contains a NUL character (\\u0000), which an environment "
                                             "variable or option value cannot hold: remove it", key));
      return std::nullopt;
    }
    return s->get();
  }
  if (const auto* b = node.as_boolean()) return b->get() ? "true" : "false";
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) {
    std::ostringstream out;  // TOML++ prints floats as TOML does: 1.5, 3.0, 10000000000.0
    out << *f;
    return out.str();
  }
  report_wrong_type(sink, node, "a string, number or boolean", key);
  return std::nullopt;
}

}  // namespace commbench
