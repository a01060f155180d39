#include "common/diagnostic.h"

#include <fmt/format.h>

namespace commbench {

std::string Diagnostic::format() const {
  const char* sev = severity == Severity::Error ? "error" : severity == Severity::Warning ? "warning" : "note";
  if (pos.line > 0)
    return fmt::format("{}:{}:{}: {}: {}", pos.file, pos.line, pos.column, sev, message);
  return fmt::format("{}: {}: {}", pos.file, sev, message);
}

bool has_errors(const std::vector<Diagnostic>& diags) {
  for (const auto& d : diags)
    if (d.severity == Diagnostic::Severity::Error) return true;
  return false;
}

void print_diagnostics(std::ostream& out, const std::vector<Diagnostic>& diags, size_t limit) {
  size_t errors = 0, warnings = 0;
  for (size_t i = 0; i < diags.size(); ++i) {
    if (i < limit) {
      out << diags[i].format() << "\n";
      continue;
    }
    (diags[i].severity == Diagnostic::Severity::Error ? errors : warnings) += 1;
  }
  if (errors + warnings == 0) return;
  out << fmt::format("... and {} more error(s) and {} more warning(s) not shown; fix the ones "
                     "above first\n",
                     errors, warnings);
}

}  // namespace commbench
