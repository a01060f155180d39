// results.csv: one row per case, header first, RFC 4180 quoting; reads straight into
// pandas.read_csv. Rows are written and flushed as cases arrive, so it survives a crash too.
// Per-iteration arrays are left out (they are in results.jsonl).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "common/csv_field.h"
#include "report/output_file.h"
#include "report/reporter.h"

namespace commbench {

class CsvReporter : public Reporter {
 public:
  // Creates <output_dir>/results.csv with its header row. Throws std::runtime_error if it cannot.
  explicit CsvReporter(const std::filesystem::path& output_dir);

  void case_done(const CaseRecord& record) override;

  static constexpr const char* kFileName = "results.csv";
  static const std::vector<std::string>& columns();

 private:
  LineFile file_;
};

// The data row for one record, in columns() order (no line terminator).
std::string csv_row(const CaseRecord& record);

}  // namespace commbench
