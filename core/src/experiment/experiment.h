// The experiment as parsed from a TOML file: what the user asked for, already type-checked.
// Produced by parse_experiment(); consumed by the planner (plan/), which expands it into runs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "commbench/backend.h"
#include "common/diagnostic.h"
#include "common/ops.h"
#include "common/timing_method.h"
#include "experiment/run_settings.h"

namespace commbench {

// A message size as written: bytes, or a count of elements (resolved per dtype).
struct SizeSpec {
  uint64_t value = 0;
  bool elements = false;  // true: `value` elements; false: `value` bytes
  std::string text;       // as written, for messages

  // Bytes for dtype size `elem_size`.
  uint64_t bytes(size_t elem_size) const { return elements ? value * elem_size : value; }
};

enum class Placement { OutOfPlace, InPlace };
const char* placement_name(Placement p);

// The settings (run_settings.h) plus the axes the planner expands and the merged tables.
struct RunSpec : RunSettings {
  std::string name;  // from the file, or "run<index>" when not given
  int index = 0;     // position among [[run]] tables, 0-based
  SourcePos pos;     // where the [[run]] table starts

  std::vector<std::string> backends;
  std::vector<OpKind> ops;
  std::vector<SizeSpec> sizes;  // explicit list or expanded min/max/factor
  std::vector<cb_dtype> dtypes;
  std::vector<cb_redop> redops;  // used by reduction ops only
  std::vector<Placement> placements{Placement::OutOfPlace};
  std::vector<int> world_sizes;  // local mode: ranks to start; each value is one execution
  std::map<std::string, std::string> env;  // extra environment of the workers
  // backend name -> option key -> value (all values rendered as strings for the C ABI)
  std::map<std::string, std::map<std::string, std::string>> options;
  bool timeout_given = false;  // false: the plan sizes each execution's limit (plan.h)

  // Where each field (and each array element) was written, for messages found after parsing
  // (e.g. capability checks). Keys: "backends", "backends[1]", "ops[0]", "sizes[2]", ...
  std::map<std::string, SourcePos> where;
  SourcePos pos_of(const std::string& key) const;
};

struct Experiment {
  std::string name;
  std::string file;        // path as given
  // SHA-256 of the text parsed, where the file cannot be read again for it (standard input);
  // empty: hash `file`.
  std::string text_sha256;
  std::string output_dir = "results";
  uint64_t seed = 42;
  std::vector<std::string> plugin_path;  // extra plugin directories (relative to the file)
  std::map<std::string, SourcePos> plugin_path_where;  // plugin_path[i] -> where it was written
  // Output formats to write (report/output_formats.h); results.jsonl always. Empty: all.
  std::vector<std::string> outputs;
  std::map<std::string, SourcePos> outputs_where;  // outputs[i] -> where it was written
  std::vector<RunSpec> runs;
  bool report = false;  // `commbench report` on the job folder at the end of `commbench run`
  nlohmann::json as_parsed;  // canonical JSON of the above, recorded in summary.json
};

struct ParseResult {
  std::optional<Experiment> experiment;  // set when there are no errors
  std::vector<Diagnostic> diagnostics;   // errors and warnings, in file order
};

// Parse and validate a file. Never throws for bad input: every problem is a Diagnostic.
// `overrides`: `--set KEY=VALUE`s applied before reading (experiment/overrides.h).
ParseResult parse_experiment_file(const std::string& path,
                                  const std::vector<std::string>& overrides = {});
// Same, from text; `file_name` is used in messages.
ParseResult parse_experiment_string(const std::string& text, const std::string& file_name,
                                    const std::vector<std::string>& overrides = {});

}  // namespace commbench
