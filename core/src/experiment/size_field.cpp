#include "experiment/size_field.h"

#include <array>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "experiment/list_field.h"
#include "experiment/sizes.h"

namespace commbench {
namespace {

constexpr std::array<std::string_view, 3> kRangeKeys{"min", "max", "factor"};

// "4KB" is 4000 bytes, as written: kept, but a decimal unit on a power of two ("4KB", "64KB",
// "256MB") is most often a KiB/MiB meant, so validate says what it is and how to write the other.
void warn_decimal_unit(DiagnosticSink& sink, const toml::node& node, const std::string& text) {
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 5> kUnits{
      {{"KB", "KiB"}, {"kB", "KiB"}, {"MB", "MiB"}, {"GB", "GiB"}, {"TB", "TiB"}}};
  std::string t = text;
  while (!t.empty() && t.back() == ' ') t.pop_back();
  for (const auto& [dec, bin] : kUnits) {
    if (t.size() <= dec.size() || t.compare(t.size() - dec.size(), dec.size(), dec) != 0) continue;
    std::string number = t.substr(0, t.size() - dec.size());
    while (!number.empty() && number.back() == ' ') number.pop_back();
    char* end = nullptr;
    const unsigned long long n = std::strtoull(number.c_str(), &end, 10);
    if (end == number.c_str() || *end != '\0' || n < 2 || (n & (n - 1)) != 0) return;  // "1MB" is often meant as written
    const auto parsed = parse_size(t);
    sink.warning(sink.pos(node),
                 fmt::format("\"{}\" is {} bytes ({} is a decimal unit); if you meant {} bytes, write \"{}{}\"",
                             text, parsed ? parsed.value->value : 0, dec, parse_size(number + std::string(bin)).value->value,
                             number, bin));
    return;
  }
}

// One size: an integer (bytes) or a string with a unit.
std::optional<SizeSpec> read_size(DiagnosticSink& sink, const toml::node& node,
                                  std::string_view key) {
  Parsed<SizeSpec> parsed;
  if (const auto* i = node.as_integer()) {
    parsed = size_from_integer(i->get());
  } else if (const auto* s = node.as_string()) {
    parsed = parse_size(s->get());
    if (parsed) warn_decimal_unit(sink, node, s->get());
  } else {
    report_wrong_type(sink, node, "a size (an integer number of bytes, or a string like \"4KiB\")",
                      key);
    return std::nullopt;
  }
  if (!parsed) {
    sink.error(sink.pos(node), parsed.error);
    return std::nullopt;
  }
  return parsed.value;
}

std::optional<std::vector<SizeSpec>> read_size_range(DiagnosticSink& sink,
                                                     const toml::table& range, WhereMap& where) {
  const SourcePos at = sink.pos(range);
  report_unknown_keys(sink, range, kRangeKeys, "the 'sizes' range");
  bool ok = true;
  std::optional<SizeSpec> min, max;
  int64_t factor = 2;
  for (auto key : {"min", "max"}) {
    const toml::node* node = range.get(key);
    if (!node) {
      sink.error(at, fmt::format("the 'sizes' range needs '{}' (e.g. sizes = {{ min = \"1KiB\", "
                                 "max = \"1MiB\", factor = 2 }})",
                                 key));
      ok = false;
      continue;
    }
    auto size = read_size(sink, *node, fmt::format("sizes.{}", key));
    ok = ok && size.has_value();
    (std::string_view(key) == "min" ? min : max) = size;
  }
  if (const toml::node* node = range.get("factor")) {
    auto f = read_integer(sink, *node, "sizes.factor", 2, std::numeric_limits<int32_t>::max());
    ok = ok && f.has_value();
    factor = f.value_or(2);
  }
  if (!ok) return std::nullopt;
  auto expanded = expand_size_range(*min, *max, factor);
  if (!expanded) {
    sink.error(at, expanded.error);
    return std::nullopt;
  }
  for (size_t i = 0; i < expanded.value->size(); ++i) where[fmt::format("sizes[{}]", i)] = at;
  return expanded.value;
}

}  // namespace

std::optional<std::vector<SizeSpec>> read_sizes(DiagnosticSink& sink, const toml::node& node,
                                                WhereMap& where) {
  if (const auto* range = node.as_table()) {
    where["sizes"] = sink.pos(node);
    return read_size_range(sink, *range, where);
  }
  if (!node.as_array()) {
    report_wrong_type(sink, node, "an array of sizes or a table { min, max, factor }", "sizes",
                      " (write sizes = [\"4KiB\"] for a single size)");
    return std::nullopt;
  }
  const ListKey spec{"sizes", "sizes", ListForm::Array, "a size", "sizes", ""};
  return read_list<SizeSpec>(
      sink, node, spec, where,
      [&](const toml::node& e, const std::string& key) { return read_size(sink, e, key); },
      [](const SizeSpec& s) {
        return fmt::format("size {} {}", s.value, s.elements ? "elements" : "B");
      });
}

}  // namespace commbench
