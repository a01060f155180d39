#include "experiment/overrides.h"

#include <utility>

#include <fmt/format.h>

#include "experiment/toml_precheck.h"

namespace commbench {
namespace {

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    out.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return out;
    start = dot + 1;
  }
}

// Sets root[path...] = value, creating intermediate tables; keys carry the override's position,
// and the sink names the new value after the override (copies of a node lose their source).
bool set_at(toml::table& table, const std::vector<std::string>& path, size_t from,
            const toml::node& value, DiagnosticSink& sink, const std::string& label) {
  toml::table* t = &table;
  for (size_t i = from; i + 1 < path.size(); ++i) {
    toml::node* next = t->get(path[i]);
    if (!next) {
      t->insert_or_assign(toml::key(path[i], value.source()), toml::table{});
      next = t->get(path[i]);
    }
    t = next->as_table();
    if (!t) return false;
  }
  // A key written in the other form (backend / backends, ...) would make the table hold both,
  // which is an error: the override replaces it.
  for (auto [one, many] : {std::pair{"backend", "backends"}, {"op", "ops"}, {"dtype", "dtypes"},
                           {"redop", "redops"}, {"world_size", "world_sizes"}}) {
    if (path.back() == one) t->erase(many);
    if (path.back() == many) t->erase(one);
  }
  auto [it, inserted] = t->insert_or_assign(toml::key(path.back(), value.source()), value);
  sink.name_node(it->second, label);
  return true;
}

// A TOML basic string holding `text` exactly.
std::string toml_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
      continue;
    }
    out += c;
  }
  return out + "\"";
}

void apply_one(toml::table& root, const std::string& set, DiagnosticSink& sink) {
  const std::string where = "--set " + set;
  const SourcePos at{where, 0, 0};
  const size_t eq = set.find('=');
  if (eq == std::string::npos || eq == 0) {
    sink.error(at, "expected KEY=VALUE, e.g. --set run.iterations=100");
    return;
  }
  const std::string key = set.substr(0, eq), text = set.substr(eq + 1);
  const std::vector<std::string> path = split_path(key);
  for (const auto& p : path)
    if (p.empty()) {
      sink.error(at, "empty key in the path: write e.g. run.iterations or defaults.world_sizes");
      return;
    }
  if (path.size() > 256) {  // each part a table level, as in the file (experiment/toml_precheck.h)
    sink.error(at, "a key of more than 256 parts: no setting is that deep");
    return;
  }
  // A bare word that is not a TOML value is taken as a string ("--set name=café").
  const bool bare = !text.empty() && text.find_first_of("\"'[]{}=,") == std::string::npos;
  std::string document = "v = " + text;
  // The same guard as for the file: TOML++ never sees input it mishandles (non-ASCII outside a
  // string) or recurses on without a bound (deep nesting).
  auto finding = precheck_toml(document);
  if (finding && bare) {
    document = "v = " + toml_string(text);
    finding = precheck_toml(document);
  }
  if (finding) {
    sink.error(at, finding->message);
    return;
  }
  // The value is parsed as its own tiny document named after the override, so every later
  // message about it points here rather than into the file.
  toml::table parsed;
  try {
    parsed = toml::parse(document, std::string_view(where));
  } catch (const toml::parse_error& e) {
    if (!bare) {
      sink.error(at, fmt::format("'{}' is not a TOML value ({}); write a number, a quoted "
                                 "string, an array [..] or a table {{..}}",
                                 text, e.description()));
      return;
    }
    parsed = toml::parse("v = " + toml_string(text), std::string_view(where));  // a bare word
  }
  const toml::node& value = *parsed.get("v");
  if (path.size() >= 2 && path[0] == "run") {
    toml::array* runs = root.get_as<toml::array>("run");
    if (!runs || runs->empty()) {
      sink.error(at, "the file has no [[run]] to set this in");
      return;
    }
    for (auto& r : *runs)
      if (auto* t = r.as_table(); !t || !set_at(*t, path, 1, value, sink, where)) {
        sink.error(at, fmt::format("cannot set '{}': part of the path is not a table", key));
        return;
      }
  } else if (path.size() >= 2 && path[0] == "defaults") {
    if (!root.get("defaults")) root.insert("defaults", toml::table{});
    toml::table* d = root.get_as<toml::table>("defaults");
    if (!d || !set_at(*d, path, 1, value, sink, where)) sink.error(at, "[defaults] is not a table in the file");
  } else if (!set_at(root, path, 0, value, sink, where)) {
    sink.error(at, fmt::format("cannot set '{}': part of the path is not a table", key));
  }
}

}  // namespace

void apply_overrides(toml::table& root, const std::vector<std::string>& sets, DiagnosticSink& sink) {
  for (const std::string& set : sets) apply_one(root, set, sink);
}

}  // namespace commbench
