// A located message about an input file: "file:line:col: message".
#pragma once

#include <string>
#include <vector>

namespace commbench {

struct SourcePos {
  std::string file;
  int line = 0;    // 1-based; 0 = unknown (then only the file is printed)
  int column = 0;  // 1-based
};

struct Diagnostic {
  enum class Severity { Error, Warning };
  Severity severity = Severity::Error;
  SourcePos pos;
  std::string message;

  // "file:line:col: error: message" (line/col omitted when unknown).
  std::string format() const;
};

bool has_errors(const std::vector<Diagnostic>& diags);

}  // namespace commbench
