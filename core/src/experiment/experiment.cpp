// parse_experiment_*: TOML++ parses the text; this file reads the top-level keys, hands each
// [[run]] (over [defaults]) to run_layer/run_resolve, and checks what spans runs.
#include "experiment/top_level_keys.h"
#include "experiment/experiment.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "common/console_text.h"
#include "common/output_placeholders.h"
#include "experiment/did_you_mean.h"
#include "experiment/overrides.h"
#include "experiment/experiment_file.h"
#include "experiment/experiment_json.h"
#include "experiment/list_field.h"
#include "experiment/run_layer.h"
#include "experiment/run_resolve.h"
#include "experiment/toml_fields.h"
#include "experiment/toml_precheck.h"

namespace commbench {
namespace {

// What one experiment may expand into (issue 28 §12): reading is linear in the file, and these
// bound the work and memory of validating and planning it (a [[run]] costs ~0.3 ms and ~16 KB).
// Far beyond any useful job: every execution starts fresh processes, a second at least.
constexpr size_t kMaxRuns = 10000;
constexpr uint64_t kMaxExecutions = 10000;
constexpr uint64_t kMaxCases = 1000000;

// Top-level keys that are not top-level settings. Run keys get a pointer to where they belong.
void report_unknown_top_level_keys(DiagnosticSink& sink, const toml::table& root) {
  const auto runs = run_keys();
  for (auto&& [key, value] : root) {
    const std::string_view k = key.str();
    if (std::find(kTopLevelKeys.begin(), kTopLevelKeys.end(), k) != kTopLevelKeys.end()) continue;
    const SourcePos at = sink.pos(key.source());
    if (std::find(runs.begin(), runs.end(), k) != runs.end())
      sink.error(at, fmt::format("'{}' is a run setting: move it into [defaults] (all runs) or a "
                                 "[[run]] table",
                                 k));
    else
      sink.error(at, fmt::format("unknown key '{}' at the top level{}", k,
                                 did_you_mean(k, kTopLevelKeys)));
  }
}

// plugin_path entries are relative to the experiment file's directory.
std::vector<std::string> read_plugin_path(DiagnosticSink& sink, const toml::node& node,
                                          const std::string& file, std::map<std::string, SourcePos>& where) {
  std::vector<std::string> dirs;
  const auto* array = node.as_array();
  if (!array) {
    report_wrong_type(sink, node, "an array of directories", "plugin_path");
    return dirs;
  }
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(file).parent_path();
  const fs::path base = fs::absolute(parent.empty() ? fs::path(".") : parent);
  for (size_t i = 0; i < array->size(); ++i) {
    auto dir = read_string(sink, *array->get(i), fmt::format("plugin_path[{}]", i));
    if (!dir) continue;
    if (dir->empty()) {
      sink.error(sink.pos(*array->get(i)), "empty directory in 'plugin_path'");
      continue;
    }
    dirs.push_back((base / *dir).lexically_normal().string());  // an absolute *dir wins
    where.emplace(dirs.back(), sink.pos(*array->get(i)));
  }
  return dirs;
}

// Every [[run]] must have a distinct name (results are keyed by it). One pass with a hash map:
// a file of 100,000 runs must not cost 5·10⁹ comparisons.
void check_unique_names(DiagnosticSink& sink, const std::vector<RunSpec>& runs) {
  std::unordered_map<std::string_view, size_t> first_with;
  first_with.reserve(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto [it, fresh] = first_with.emplace(runs[i].name, i);
    if (fresh) continue;
    // A name from --set run.name=... has no line of its own: name the run by its place instead.
    const SourcePos first = runs[it->second].pos_of("name");
    const std::string where = first.line > 0 ? fmt::format("the run at line {}", first.line)
                                             : fmt::format("[[run]] number {}", it->second + 1);
    sink.error(runs[i].pos_of("name"),
               fmt::format("duplicate run name '{}' (also the name of {}): give each [[run]] a distinct 'name'",
                           runs[i].name, where));
  }
}

// The executions and cases the runs expand into (plan/plan.h), counted before the plan is built.
void check_plan_bounds(DiagnosticSink& sink, const std::vector<RunSpec>& runs) {
  uint64_t executions = 0, cases = 0;
  for (const RunSpec& r : runs) {
    uint64_t per_execution = 0;
    for (OpKind op : r.ops)
      per_execution += r.sizes.size() * r.dtypes.size() * (op_info(op).reduction ? r.redops.size() : 1) *
                       r.placements.size();
    // Each repeat is an execution of its own (plan/plan.cpp).
    const uint64_t runs_executions = r.backends.size() * r.world_sizes.size() * static_cast<uint64_t>(r.repeats);
    executions += runs_executions;
    cases += runs_executions * per_execution;
    if (executions > kMaxExecutions || cases > kMaxCases) {
      // At the run's longest list of those that make the bound it passed (its value to change),
      // not its header; at the header when no list of the run is longer than one (the runs
      // before it used the room).
      const bool too_many_executions = executions > kMaxExecutions;
      const bool reduces = std::any_of(r.ops.begin(), r.ops.end(), [](OpKind op) { return op_info(op).reduction; });
      std::vector<std::pair<const char*, uint64_t>> lists{
          {"repeats", static_cast<uint64_t>(r.repeats)}, {"world_sizes", r.world_sizes.size()},
          {"backends", r.backends.size()}};
      if (!too_many_executions) {
        for (auto list : {std::pair<const char*, uint64_t>{"sizes", r.sizes.size()}, {"dtypes", r.dtypes.size()},
                          {"ops", r.ops.size()}, {"placements", r.placements.size()}})
          lists.push_back(list);
        if (reduces) lists.emplace_back("redops", r.redops.size());
      }
      const auto longest = *std::max_element(lists.begin(), lists.end(),
                                             [](const auto& a, const auto& b) { return a.second < b.second; });
      const std::string over = too_many_executions
                                   ? fmt::format("{} executions, more than the {} allowed", executions, kMaxExecutions)
                                   : fmt::format("{} cases, more than the {} allowed", cases, kMaxCases);
      sink.error(longest.second > 1 ? r.pos_of(longest.first) : r.pos,
                 fmt::format("with this run the experiment expands into {} (executions are backends x world sizes x "
                             "repeats; cases, each execution's ops x sizes x dtypes x redops x placements): split it "
                             "into several files, or narrow its lists{}",
                             over, longest.second > 1 ? fmt::format(" ('{}' here has {})", longest.first, longest.second)
                                                      : std::string()));
      return;
    }
  }
}

// Options in [defaults] for a backend no run uses are most likely a misspelt backend.
void check_default_options_used(DiagnosticSink& sink, const RunLayer& defaults,
                                const std::vector<RunSpec>& runs) {
  for (const auto& option : defaults.options) {
    const std::string& backend = option.first;  // not a structured binding: clang 14 (the
                                                // fuzzer's compiler) cannot capture those
    const bool used = std::any_of(runs.begin(), runs.end(), [&](const RunSpec& r) {
      return std::find(r.backends.begin(), r.backends.end(), backend) != r.backends.end();
    });
    if (used) continue;
    auto it = defaults.where.find("options." + backend);
    sink.error(it != defaults.where.end() ? it->second : defaults.pos,
               fmt::format("options for '{}' in [defaults] but no run uses backend '{}'", backend,
                           backend));
  }
}

class ExperimentReader {
 public:
  ExperimentReader(DiagnosticSink& sink, const toml::table& root, const std::string& file)
      : sink_(sink), root_(root), file_(file) {}

  std::optional<Experiment> read() {
    Experiment exp;
    exp.file = file_;
    report_unknown_top_level_keys(sink_, root_);
    read_top_level(exp);
    RunLayer defaults = read_defaults();
    read_runs(exp, defaults);
    if (sink_.has_errors()) return std::nullopt;
    exp.as_parsed = experiment_to_json(exp);
    return exp;
  }

 private:
  SourcePos file_start() const { return SourcePos{file_, 1, 1}; }

  void read_top_level(Experiment& exp) {
    if (const toml::node* n = root_.get("name")) {
      if (auto name = read_name_text(sink_, *n, "name")) {
        if (name->empty()) sink_.error(sink_.pos(*n), "'name' is empty: name the experiment");
        exp.name = *name;
      }
    } else {
      sink_.error(file_start(), "'name' is required: add name = \"my-experiment\" at the top of "
                                "the file");
    }
    if (const toml::node* n = root_.get("output_dir")) {
      if (auto dir = read_string(sink_, *n, "output_dir")) {
        if (dir->empty()) sink_.error(sink_.pos(*n), "'output_dir' is empty: leave it out for "
                                                     "\"results\"");
        // A NUL ended the path early (a folder "res/a" made for "res/a\0b", and an error cut off at
        // it); a line break made a folder no listing shows on one line.
        if (const auto c = first_unprintable(*dir))
          sink_.error(sink_.pos(*n), fmt::format("'output_dir' holds a control character ({}): write the folder's "
                                                 "path with printable characters only",
                                                 describe_code_point(*c)));
        else if (auto bad = unknown_placeholder(*dir))
          sink_.error(sink_.pos(*n), fmt::format("'output_dir' holds '{}', which is not a placeholder: the one there "
                                                 "is {} (the GPU, driver and CUDA version)", *bad, kHardwarePlaceholder));
        // No shell reads this path: "~/results" made a folder named "~" in the current folder (and
        // `rm -rf ~` is how one cleans that up).
        if (!dir->empty() && (*dir)[0] == '~')
          sink_.error(sink_.pos(*n), "'output_dir' starts with '~', which commbench does not expand (it would create "
                                     "a folder named '~' here): write the full path, or one relative to where you "
                                     "run commbench");
        else if (const auto var = dir->find('$');
                 var != std::string::npos && var + 1 < dir->size() &&
                 (std::isalpha(static_cast<unsigned char>((*dir)[var + 1])) || (*dir)[var + 1] == '{' || (*dir)[var + 1] == '_'))
          sink_.error(sink_.pos(*n), fmt::format("'output_dir' holds '{}', which looks like an environment variable: "
                                                 "commbench does not expand them (it would create a folder of that name); "
                                                 "write the path itself, or pass it with -o \"$VAR/...\" where your shell expands it",
                                                 dir->substr(var)));
        exp.output_dir = *dir;
      }
    }
    if (const toml::node* n = root_.get("seed"))
      exp.seed = static_cast<uint64_t>(
          read_integer(sink_, *n, "seed", 0, std::numeric_limits<int64_t>::max()).value_or(0));
    if (const toml::node* n = root_.get("report"))
      exp.report = read_bool(sink_, *n, "report").value_or(false);
    if (const toml::node* n = root_.get("plugin_path"))
      exp.plugin_path = read_plugin_path(sink_, *n, file_, exp.plugin_path_where);
    if (const toml::node* n = root_.get("outputs")) read_outputs(*n, exp);
  }

  // Output formats by name; their names are checked against the registry after parsing
  // (report/output_formats.h, check_outputs), which the parser does not depend on.
  void read_outputs(const toml::node& n, Experiment& exp) {
    auto names = read_list<std::string>(
        sink_, n, ListKey{"outputs", "outputs", ListForm::Array, "a string", "strings", ""}, exp.outputs_where,
        [&](const toml::node& e, const std::string& k) { return read_string(sink_, e, k); },
        [](const std::string& s) { return fmt::format("'{}'", s); });
    if (names) exp.outputs = *names;
  }

  RunLayer read_defaults() {
    const toml::node* node = root_.get("defaults");
    if (!node) {
      RunLayer none;  // no [defaults]: every run key falls through to the built-in defaults
      none.pos = file_start();
      return none;
    }
    const auto* table = node->as_table();
    if (!table) {
      report_wrong_type(sink_, *node, "a table", "defaults", " (write [defaults] on its own line)");
      return RunLayer{};
    }
    return read_run_layer(*table, sink_.pos(*table, file_start()), sink_, /*is_defaults=*/true);
  }

  void read_runs(Experiment& exp, const RunLayer& defaults) {
    const toml::node* node = root_.get("run");
    const auto* array = node ? node->as_array() : nullptr;
    if (!node || (array && array->empty())) {
      sink_.error(node ? sink_.pos(*node) : file_start(),
                  "no [[run]] table: add at least one [[run]] with backends, ops and sizes");
      return;
    }
    if (!array || !array->is_array_of_tables()) {
      report_wrong_type(sink_, *node, "an array of tables", "run",
                        " (write each run as [[run]], with two brackets)");
      return;
    }
    bool all_ok = true;
    if (array->size() > kMaxRuns) {
      // Said at the first table past the limit, and nothing after it is read: a file of 100,000
      // runs is refused in the time 10,000 take.
      sink_.error(sink_.pos(*array->get(kMaxRuns)),
                  fmt::format("this file has {} [[run]] tables; an experiment may have at most {}: split it "
                              "into several files",
                              array->size(), kMaxRuns));
      all_ok = false;
    }
    for (size_t i = 0; i < std::min(array->size(), kMaxRuns); ++i) {
      const auto& table = *array->get(i)->as_table();
      RunLayer layer = read_run_layer(table, sink_.pos(table, file_start()), sink_, false);
      auto run = resolve_run(layer, defaults, static_cast<int>(i), sink_);
      if (run) exp.runs.push_back(std::move(*run));
      all_ok = all_ok && run.has_value();
    }
    check_unique_names(sink_, exp.runs);
    if (all_ok) check_default_options_used(sink_, defaults, exp.runs);
    if (all_ok) check_plan_bounds(sink_, exp.runs);
  }

  DiagnosticSink& sink_;
  const toml::table& root_;
  const std::string& file_;
};

}  // namespace

const char* placement_name(Placement p) {
  return p == Placement::InPlace ? "in_place" : "out_of_place";
}

SourcePos RunSpec::pos_of(const std::string& key) const {
  // Most specific first: "options.gloo.algo", then "options.gloo", "options"; "ops[2]", "ops".
  std::string k = key;
  while (true) {
    if (auto it = where.find(k); it != where.end()) return it->second;
    const size_t cut = k.find_last_of("[.");
    if (cut == std::string::npos || cut == 0) return pos;
    k.resize(cut);
  }
}

ParseResult parse_experiment_string(const std::string& text, const std::string& file_name,
                                    const std::vector<std::string>& overrides) {
  ParseResult result;
  DiagnosticSink sink(file_name);
  if (auto finding = precheck_toml(text)) {
    sink.error(SourcePos{file_name, finding->line, finding->column}, finding->message);
    result.diagnostics = sink.take_sorted();
    return result;
  }
  toml::table root;
  try {
    root = toml::parse(text, std::string_view(file_name));
  } catch (const toml::parse_error& e) {
    sink.error(sink.pos(e.source()), std::string(e.description()));
    result.diagnostics = sink.take_sorted();
    return result;
  }
  apply_overrides(root, overrides, sink);
  result.experiment = ExperimentReader(sink, root, file_name).read();
  result.diagnostics = sink.take_sorted();
  return result;
}

ParseResult parse_experiment_file(const std::string& path, const std::vector<std::string>& overrides) {
  auto text = read_experiment_file(path);
  if (auto* error = std::get_if<FileReadError>(&text)) {
    ParseResult result;
    result.diagnostics.push_back(
        Diagnostic{Diagnostic::Severity::Error, SourcePos{path, 0, 0}, std::move(error->message)});
    return result;
  }
  return parse_experiment_string(std::get<std::string>(text), path, overrides);
}

}  // namespace commbench
