// Every output a job can write, registered in one table (output_formats.cpp): the name an
// experiment's `outputs = [...]` uses, what it writes, and how to make its Reporter. The agent
// knows only this and the Reporter interface (reporter.h); adding a format is a Reporter class
// and one row (docs/architecture.md, "How to add an output format").
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/diagnostic.h"
#include "experiment/experiment.h"

namespace commbench {

class Reporter;

struct OutputContext {
  std::filesystem::path job_dir;  // the job's results folder (created)
  std::FILE* out = stdout;        // console tables
  std::FILE* progress = stderr;   // console progress lines
};

struct OutputFormat {
  std::string_view name;     // in `outputs = [...]`
  std::string_view writes;   // docs: the file(s), or "standard output"
  std::string_view meaning;  // docs
  // Written whatever `outputs` says: results.jsonl is the record every other file is rebuilt
  // from, so it is never turned off (docs/output.md).
  bool always;
  std::unique_ptr<Reporter> (*make)(const OutputContext&);
};

std::span<const OutputFormat> output_formats();
const OutputFormat* find_output_format(std::string_view name);
// The names, in table order (the default of `outputs`).
std::vector<std::string_view> output_format_names();

// Errors for names in `exp.outputs` that no row has, at their positions, with a suggestion.
std::vector<Diagnostic> check_outputs(const Experiment& exp);
// Whether `exp` asks for format `name` (every format when it names none).
bool output_chosen(const Experiment& exp, std::string_view name);

}  // namespace commbench
