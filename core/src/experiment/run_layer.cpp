#include "experiment/top_level_keys.h"
#include "experiment/run_layer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commbench/sdk/dtypes.hpp"
#include "experiment/did_you_mean.h"
#include "experiment/list_field.h"
#include "experiment/run_setting_table.h"
#include "experiment/size_field.h"

namespace commbench {
namespace {

constexpr int kIntMax = std::numeric_limits<int32_t>::max();

// Every key: the structural ones read here, then the table's settings.
const std::vector<std::string_view>& all_run_keys() {
  static const std::vector<std::string_view> keys = [] {
    std::vector<std::string_view> k;
    for (const RunKeyDoc& d : structural_run_keys()) k.push_back(d.key);
    for (std::string_view alias : {"backend", "op", "dtype", "redop", "world_size", "timing"}) k.push_back(alias);
    for (const RunSetting& s : run_settings()) k.push_back(s.key);
    return k;
  }();
  return keys;
}

// Spellings from other tools, suggested (not accepted): the file format has one name per dtype.
constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kDtypeSpellings{{
    {"float32", "f32"}, {"float", "f32"}, {"float16", "f16"}, {"half", "f16"},
    {"bfloat16", "bf16"}, {"float64", "f64"}, {"double", "f64"}, {"int", "int32"},
    {"e4m3", "f8e4m3"}, {"e5m2", "f8e5m2"},
}};

template <class E, int N>
std::vector<std::string_view> enum_names(std::string_view (*name)(E)) {
  std::vector<std::string_view> names;
  for (int i = 0; i < N; ++i) names.push_back(name(static_cast<E>(i)));
  return names;
}

// A string naming one of `valid`, turned into a value by `parse`.
template <class T, class Parse>
std::optional<T> read_name(DiagnosticSink& sink, const toml::node& node, std::string_view key,
                           std::string_view what, const std::vector<std::string_view>& valid,
                           Parse parse) {
  auto text = read_string(sink, node, key);
  if (!text) return std::nullopt;
  if (std::optional<T> v = parse(*text)) return v;
  sink.error(sink.pos(node), unknown_value(what, *text, valid));
  return std::nullopt;
}

std::vector<std::string_view> op_names() {
  std::vector<std::string_view> names;
  for (const auto& o : all_ops()) names.push_back(o.name);
  return names;
}

std::string quoted(std::string_view s) { return fmt::format("'{}'", s); }

bool is_env_name(std::string_view name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Reading one table into one layer; one member function per key.
class LayerReader {
 public:
  LayerReader(DiagnosticSink& sink, RunLayer& layer) : sink_(sink), layer_(layer) {}

  void read_key(std::string_view key, const toml::node& v) {
    RunLayer& layer = layer_;
    WhereMap& where = layer_.where;
    if (key == "name") {
      layer.name = read_name_text(sink_, v, key);
      where["name"] = sink_.pos(v);
      if (layer.name && layer.name->empty()) {
        sink_.error(sink_.pos(v), "'name' is empty: give the run a name or leave the key out");
        layer.name.reset();
      }
    } else if (key == "backends" || key == "backend") {
      layer.backends = read_list<std::string>(
          sink_, v, list_key(key, "backends", "backend", "a string", "strings"), where,
          [&](const toml::node& e, const std::string& k) { return backend_name(e, k); }, quoted);
    } else if (key == "ops" || key == "op") {
      const auto valid = op_names();
      layer.ops = read_list<OpKind>(
          sink_, v, list_key(key, "ops", "op", "a string", "strings"), where,
          [&](const toml::node& e, const std::string& k) {
            return read_name<OpKind>(sink_, e, k, "op", valid, parse_op_kind);
          },
          [](OpKind o) { return quoted(op_info(o).name); });
    } else if (key == "sizes") {
      layer.sizes = read_sizes(sink_, v, where);
    } else if (key == "dtypes" || key == "dtype") {
      layer.dtypes = read_list<cb_dtype>(
          sink_, v, list_key(key, "dtypes", "dtype", "a string", "strings"), where,
          [&](const toml::node& e, const std::string& k) { return dtype(e, k); },
          [](cb_dtype d) { return quoted(sdk::dtype_name(d)); });
    } else if (key == "redops" || key == "redop") {
      const auto valid = enum_names<cb_redop, CB_REDOP_COUNT_V1>(sdk::redop_name);
      layer.redops = read_list<cb_redop>(
          sink_, v, list_key(key, "redops", "redop", "a string", "strings"), where,
          [&](const toml::node& e, const std::string& k) {
            return read_name<cb_redop>(sink_, e, k, "reduce op", valid, sdk::parse_redop);
          },
          [](cb_redop r) { return quoted(sdk::redop_name(r)); });
    } else if (key == "placement") {
      layer.placements = read_list<Placement>(
          sink_, v, ListKey{key, "placement", ListForm::ArrayOrScalar, "a string", "strings", ""}, where,
          [&](const toml::node& e, const std::string& k) { return placement(e, k); },
          [](Placement p) { return quoted(placement_name(p)); });
    } else if (key == "world_sizes" || key == "world_size") {
      layer.world_sizes = read_list<int>(
          sink_, v, list_key(key, "world_sizes", "world_size", "an integer", "integers"), where,
          [&](const toml::node& e, const std::string& k) { return int_in(e, k, 1, kIntMax); },
          [](int n) { return fmt::format("world size {}", n); });
    } else if (key == "env") {
      read_env(v);
    } else if (key == "options") {
      read_options(v);
    } else if (key == "timing") {
      // One word, one meaning: in records `timing` is the clock, so the method's key is `method`.
      sink_.warning(sink_.pos(v), "'timing' is the former name of 'method' (the timing method); write "
                                  "method = ... — in results, `timing` names the clock");
      if (!find_run_setting("method")->read(v, "method", sink_, where, layer.settings)) layer.invalid.insert("method");
    } else if (const RunSetting* setting = find_run_setting(key)) {
      if (!setting->read(v, key, sink_, where, layer.settings)) layer.invalid.insert(std::string(key));
    }
  }

 private:
  static ListKey list_key(std::string_view written, std::string_view plural,
                          std::string_view singular, std::string_view element,
                          std::string_view elements) {
    const bool is_singular = written == singular;
    return ListKey{written, plural, is_singular ? ListForm::Scalar : ListForm::Array, element,
                   elements, is_singular ? plural : singular};
  }

  std::optional<int> int_in(const toml::node& v, std::string_view key, int64_t min, int64_t max) {
    auto i = read_integer(sink_, v, key, min, max);
    if (!i) return std::nullopt;
    return static_cast<int>(*i);
  }

  std::optional<std::string> backend_name(const toml::node& e, std::string_view key) {
    auto name = read_string(sink_, e, key);
    if (name && name->empty()) {
      sink_.error(sink_.pos(e), "empty backend name: write a plugin name such as \"gloo\"");
      return std::nullopt;
    }
    return name;
  }

  std::optional<cb_dtype> dtype(const toml::node& e, std::string_view key) {
    auto text = read_string(sink_, e, key);
    if (!text) return std::nullopt;
    if (auto d = sdk::parse_dtype(*text)) return d;
    for (auto [spelling, name] : kDtypeSpellings) {
      if (spelling == *text) {
        sink_.error(sink_.pos(e), fmt::format("unknown dtype '{}'; did you mean '{}'?", *text, name));
        return std::nullopt;
      }
    }
    sink_.error(sink_.pos(e), unknown_value("dtype", *text,
                                            enum_names<cb_dtype, CB_DTYPE_COUNT_V1>(sdk::dtype_name)));
    return std::nullopt;
  }

  std::optional<Placement> placement(const toml::node& e, std::string_view key) {
    static const std::vector<std::string_view> valid{placement_name(Placement::OutOfPlace),
                                                     placement_name(Placement::InPlace)};
    return read_name<Placement>(sink_, e, key, "placement", valid,
                                [](std::string_view s) -> std::optional<Placement> {
                                  if (s == placement_name(Placement::OutOfPlace)) return Placement::OutOfPlace;
                                  if (s == placement_name(Placement::InPlace)) return Placement::InPlace;
                                  return std::nullopt;
                                });
  }

  void read_env(const toml::node& v) {
    layer_.where["env"] = sink_.pos(v);
    const auto* table = v.as_table();
    if (!table) {
      report_wrong_type(sink_, v, "a table of environment variables", "env",
                        " (write env = { NAME = \"value\" })");
      return;
    }
    for (auto&& [k, value] : *table) {
      const std::string key = fmt::format("env.{}", k.str());
      layer_.where[key] = sink_.pos(value);
      if (!is_env_name(k.str())) {
        sink_.error(sink_.pos(k.source()),
                    fmt::format("'{}' is not a valid environment variable name: use letters, "
                                "digits and '_', not starting with a digit",
                                k.str()));
        continue;
      }
      auto text = read_scalar_as_text(sink_, value, key);
      if (!text) continue;
      // The kernel refuses to start a program with one "NAME=value" over 128 KiB (MAX_ARG_STRLEN),
      // which surfaced as a plugin probe failing with "Argument list too long".
      constexpr size_t kMaxEnvString = 128 * 1024;
      const size_t bytes = env_entry_bytes(k.str(), *text);
      if (bytes > kMaxEnvString) {
        sink_.error(sink_.pos(value), fmt::format("'{}' is {} bytes: Linux passes at most 131072 bytes per environment "
                                                  "variable (NAME=value), so no worker could start; put the value in a "
                                                  "file and pass the file's path",
                                                  key, bytes));
        continue;
      }
      env_bytes_ += bytes;
      if (env_bytes_ > kMaxEnvBytes && env_bytes_ - bytes <= kMaxEnvBytes)  // said once, where it is crossed
        sink_.error(sink_.pos(value), fmt::format("'env' holds {} bytes by '{}': over {} KiB of environment the "
                                                  "workers may not start (the kernel's limit on arguments and "
                                                  "environment together is typically 2 MiB); put large values in files",
                                                  env_bytes_, key, kMaxEnvBytes / 1024));
      if (k.str() == "GLOO_SOCKET_IFNAME")
        sink_.warning(sink_.pos(k.source()), "GLOO_SOCKET_IFNAME is read by PyTorch, not by libgloo or commbench: "
                                             "commbench's gloo takes its interface from options.gloo.iface "
                                             "(docs/backends/gloo.md)");
      layer_.env[std::string(k.str())] = std::move(*text);
    }
  }

  void read_options(const toml::node& v) {
    const SourcePos at = sink_.pos(v, layer_.pos);
    layer_.where["options"] = at;
    const auto* table = v.as_table();
    if (!table) {
      report_wrong_type(sink_, v, "a table of backend option tables", "options",
                        " (write [run.options.gloo] or options = { gloo = { key = \"value\" } })");
      return;
    }
    for (auto&& [backend, opts] : *table) {
      const std::string backend_key = fmt::format("options.{}", backend.str());
      layer_.where[backend_key] = sink_.pos(opts, sink_.pos(backend.source()));
      const auto* opts_table = opts.as_table();
      if (!opts_table) {
        report_wrong_type(sink_, opts, "a table of options", backend_key,
                          fmt::format(" (write options.{} = {{ key = \"value\" }})", backend.str()));
        continue;
      }
      auto& dest = layer_.options[std::string(backend.str())];
      for (auto&& [k, value] : *opts_table) {
        const std::string key = fmt::format("{}.{}", backend_key, k.str());
        layer_.where[key] = sink_.pos(value);
        // The key itself, for "unknown option" (option_check.cpp); a bad value points at the value.
        layer_.where[key + "#key"] = sink_.pos(k.source());
        if (auto text = read_scalar_as_text(sink_, value, key)) dest[std::string(k.str())] = *text;
      }
    }
  }

  DiagnosticSink& sink_;
  RunLayer& layer_;
  size_t env_bytes_ = 0;
};

// The canonical (plural) name of a key: "backend" -> "backends".
std::string canonical_key(std::string_view key) {
  for (auto [singular, plural] : {std::pair{"backend", "backends"}, {"op", "ops"},
                                  {"dtype", "dtypes"}, {"redop", "redops"},
                                  {"world_size", "world_sizes"}, {"timing", "method"}})
    if (key == singular) return plural;
  return std::string(key);
}

}  // namespace

std::span<const std::string_view> run_keys() { return all_run_keys(); }

size_t env_bytes(const std::map<std::string, std::string>& env) {
  size_t n = 0;
  for (const auto& [k, v] : env) n += env_entry_bytes(k, v);
  return n;
}

RunLayer read_run_layer(const toml::table& table, SourcePos header, DiagnosticSink& sink,
                        bool is_defaults) {
  RunLayer layer;
  layer.pos = header;
  LayerReader reader(sink, layer);
  for (auto&& [k, value] : table) {
    const std::string_view key = k.str();
    const bool known = std::find(all_run_keys().begin(), all_run_keys().end(), key) != all_run_keys().end();
    if (!known) continue;  // reported by report_unknown_keys below
    if (is_defaults && key == "name") {
      sink.error(sink.pos(k.source()),
                 "'name' cannot be set in [defaults]: each [[run]] has its own name");
      continue;
    }
    const std::string canonical = canonical_key(key);
    if (canonical != key && table.contains(canonical)) {
      sink.error(sink.pos(k.source()),
                 fmt::format("both '{}' and '{}' are given: keep one", key, canonical));
      continue;
    }
    layer.written.insert(canonical);
    reader.read_key(key, value);
  }
  // A top-level key written inside the table (`seed`, `output_dir`, ...) is told where it goes,
  // as a run key at the top level is; every other unknown key gets "did you mean".
  std::vector<std::string_view> valid = all_run_keys();
  for (auto&& [k, value] : table) {
    const std::string_view key = k.str();
    if (std::find(valid.begin(), valid.end(), key) != valid.end() ||
        std::find(kTopLevelKeys.begin(), kTopLevelKeys.end(), key) == kTopLevelKeys.end())
      continue;
    valid.push_back(key);
    sink.error(k.source().begin.line > 0 ? sink.pos(k.source()) : sink.pos(value),
               fmt::format("'{}' is a top-level key, not a run setting: move it above the first [[run]] and "
                           "[defaults]", key));
  }
  report_unknown_keys(sink, table, valid, is_defaults ? "[defaults]" : "[[run]]");
  return layer;
}

}  // namespace commbench
