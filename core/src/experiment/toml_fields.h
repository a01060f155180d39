// Reading typed values out of TOML++ nodes, turning every surprise into a located Diagnostic.
// The experiment parser is built from these so that every message has the same shape:
//   "expected an integer for 'warmup', got a string"  at the value's file:line:col.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "common/diagnostic.h"

namespace commbench {

// Positions of keys and array elements ("sizes", "sizes[2]"), as in RunSpec::where.
using WhereMap = std::map<std::string, SourcePos>;

// Collects the diagnostics of one file.
class DiagnosticSink {
 public:
  explicit DiagnosticSink(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  // Messages about `node` and everything inside it name `label` instead of a file position
  // (values that came from the command line, experiment/overrides.h).
  void name_node(const toml::node& node, const std::string& label);
  // Where `node` starts; `fallback` for nodes TOML++ has no position for (implicit tables).
  SourcePos pos(const toml::node& node, const SourcePos& fallback = {}) const;
  SourcePos pos(const toml::source_region& region) const;

  void error(SourcePos pos, std::string message);
  void warning(SourcePos pos, std::string message);
  bool has_errors() const;
  size_t error_count() const;
  // Sorted by position (stable), exact duplicates removed — a value inherited from [defaults]
  // by several runs is reported once.
  std::vector<Diagnostic> take_sorted();

 private:
  std::string file_;
  std::vector<Diagnostic> diags_;
  std::map<const toml::node*, std::string> named_;
};

// "a string", "an integer", "a floating-point number", "a boolean", "an array", "a table", ...
std::string_view type_phrase(const toml::node& node);

// "expected {expected} for '{key}', got {type of node}{hint}" at the node.
void report_wrong_type(DiagnosticSink& sink, const toml::node& node, std::string_view expected,
                       std::string_view key, std::string_view hint = {});

// Errors for every key of `table` not in `valid`, with a suggestion; `where` names the table in
// the message ("[[run]]", "[defaults]", "the top level").
void report_unknown_keys(DiagnosticSink& sink, const toml::table& table,
                         std::span<const std::string_view> valid, std::string_view where);

std::optional<std::string> read_string(DiagnosticSink& sink, const toml::node& node,
                                       std::string_view key);
// A name that heads tables and lines of the console, summary.md and the reports (the
// experiment's, a run's): a string without control characters (a line break in it would split a
// heading or a console line in two).
std::optional<std::string> read_name_text(DiagnosticSink& sink, const toml::node& node,
                                          std::string_view key);
std::optional<bool> read_bool(DiagnosticSink& sink, const toml::node& node, std::string_view key);
// An integer in [min, max]; out of range: "'{key}' must be at least {min}, got {v}".
std::optional<int64_t> read_integer(DiagnosticSink& sink, const toml::node& node,
                                    std::string_view key, int64_t min, int64_t max);
// A duration string or a number of seconds; >= 0, or > 0 unless `zero_allowed`.
std::optional<double> read_duration(DiagnosticSink& sink, const toml::node& node,
                                    std::string_view key, bool zero_allowed);
// A string, integer, float or boolean rendered as text the way TOML writes it (true, 42, 1.5);
// for environment variables and backend options, which the C ABI passes as strings.
std::optional<std::string> read_scalar_as_text(DiagnosticSink& sink, const toml::node& node,
                                               std::string_view key);

}  // namespace commbench
