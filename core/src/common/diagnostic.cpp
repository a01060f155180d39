#include "common/diagnostic.h"

#include <fmt/format.h>

namespace commbench {

std::string Diagnostic::format() const {
  const char* sev = severity == Severity::Error ? "error" : "warning";
  if (pos.line > 0)
    return fmt::format("{}:{}:{}: {}: {}", pos.file, pos.line, pos.column, sev, message);
  return fmt::format("{}: {}: {}", pos.file, sev, message);
}

bool has_errors(const std::vector<Diagnostic>& diags) {
  for (const auto& d : diags)
    if (d.severity == Diagnostic::Severity::Error) return true;
  return false;
}

}  // namespace commbench
