// A located message about an input file: "file:line:col: message".
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

namespace commbench {

struct SourcePos {
  std::string file;
  int line = 0;    // 1-based; 0 = unknown (then only the file is printed)
  int column = 0;  // 1-based
};

struct Diagnostic {
  enum class Severity { Error, Warning, Note };  // a note informs: nothing to fix
  Severity severity = Severity::Error;
  SourcePos pos;
  std::string message;

  // "file:line:col: error: message" (line/col omitted when unknown).
  std::string format() const;
};

bool has_errors(const std::vector<Diagnostic>& diags);

// Past this many, a file is broken wholesale (or not an experiment at all): more lines would
// bury the first, most useful ones.
inline constexpr size_t kMaxPrintedDiagnostics = 50;

// One line per diagnostic, at most `limit`, then "... and N more errors/warnings" if any were
// left out.
void print_diagnostics(std::ostream& out, const std::vector<Diagnostic>& diags,
                       size_t limit = kMaxPrintedDiagnostics);

}  // namespace commbench
