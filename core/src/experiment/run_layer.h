// One layer of run settings: what a single TOML table ([defaults] or one [[run]]) writes.
// A run is the [[run]] layer over the [defaults] layer over built-in defaults (run_resolve.h).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "experiment/experiment.h"
#include "experiment/run_settings.h"
#include "experiment/toml_fields.h"

namespace commbench {

// Every key a [[run]] table accepts ([defaults] accepts all but `name`). Singular aliases
// (backend, op, dtype, redop, world_size) stand for one-element lists.
std::span<const std::string_view> run_keys();

// The most environment one run may pass its workers, as NAME=value strings (the kernel's limit on
// arguments and environment together is typically 2 MiB): per `env` table, and for the run's
// own and [defaults]' together.
inline constexpr size_t kMaxEnvBytes = 1024 * 1024;
// Bytes of one variable as the kernel counts them: "NAME=value" and its terminating NUL.
inline size_t env_entry_bytes(std::string_view name, std::string_view value) { return name.size() + value.size() + 2; }
// Of a whole env table.
size_t env_bytes(const std::map<std::string, std::string>& env);

struct RunLayer {
  SourcePos pos;  // the table's header
  // Canonical names ("backends" also for `backend`) of the keys the table writes, valid or not:
  // a key written with a bad value still overrides the layer below, so its error is not
  // followed by confusing errors about the inherited value.
  std::set<std::string> written;

  std::optional<std::string> name;
  std::optional<std::vector<std::string>> backends;
  std::optional<std::vector<OpKind>> ops;
  std::optional<std::vector<SizeSpec>> sizes;
  std::optional<std::vector<cb_dtype>> dtypes;
  std::optional<std::vector<cb_redop>> redops;
  std::optional<std::vector<Placement>> placements;
  std::optional<std::vector<int>> world_sizes;
  std::map<std::string, std::string> env;
  std::map<std::string, std::map<std::string, std::string>> options;
  // The settings of the table (run_setting_table.h) this layer writes, by key; only those in
  // `written` and not in `invalid` mean anything.
  RunSettings settings;
  std::set<std::string> invalid;

  WhereMap where;  // positions of what this layer writes (keys as in RunSpec::where)

  bool writes(const std::string& key) const { return written.count(key) > 0; }
};

// Reads the run keys of `table`, reporting every problem to `sink`. `is_defaults` makes `name`
// an error (each run names itself).
RunLayer read_run_layer(const toml::table& table, SourcePos header, DiagnosticSink& sink,
                        bool is_defaults);

}  // namespace commbench
