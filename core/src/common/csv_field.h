// One field of the CSV files commbench writes (results.csv, execution_log.csv, telemetry.csv):
// RFC 4180 quoting, and text that a spreadsheet would take for a formula made inert.
#pragma once

#include <string>
#include <string_view>

namespace commbench {

// Quoted (inner quotes doubled) when it holds a comma, quote, CR or LF, or starts or ends with a
// space. A field that starts with '=', '+', '-', '@', a tab or a CR (an experiment named
// "=HYPERLINK(...)") gets a leading apostrophe and quotes, the way spreadsheet-safe writers
// escape it (OWASP "CSV injection"): spreadsheets show it as text instead of running it.
// Numbers are written by their callers directly, never through here, so "-1" stays a number.
std::string csv_field(std::string_view value);

}  // namespace commbench
