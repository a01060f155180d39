// Side-by-side backend comparison of one [[run]]: the same case (op, dtype, redop, placement,
// world size, size) measured by each backend, with time ratios against the first backend.
// Built once here, rendered by the console and Markdown reporters.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "measure/case_record.h"

namespace commbench {

struct ComparisonRow {
  uint64_t bytes = 0;
  uint64_t count = 0;
  int src = -1, dst = -1;  // all_pairs: one row per directed pair and size
  // One entry per ComparisonSet::backends; nullptr where that backend has no record.
  std::vector<const CaseRecord*> by_backend;
};

struct ComparisonTable {
  std::string op, dtype, redop, placement;
  int world_size = 0;
  // What else sets one table's cases apart (case_variant, report/repeat_choice.h): "" for most ops.
  std::string variant;
  std::vector<ComparisonRow> rows;  // ascending size (then src, dst)
};

struct ComparisonSet {
  std::vector<std::string> backends;  // column order; backends[0] is the reference
  std::vector<ComparisonTable> tables;
  // The most repeats (`repeats`) any backend has of one case. With more than one, each cell is
  // that backend's median repeat by mean time, the one the report's series take too.
  int max_repeats = 1;
};

// "; with 3 repeats, each backend's median repeat (by mean time)", or "" without repeats.
std::string repeats_note(const ComparisonSet& set);

// `backend_order` is the run's backend list (RunSpec::backends); backends found only in the
// records are appended in order of appearance. Pointers refer into `records`.
ComparisonSet compare_backends(const std::vector<std::string>& backend_order,
                               const std::vector<CaseRecord>& records);

// "4 KiB", or "4 KiB 0→1" for an all_pairs row.
std::string row_label(const ComparisonRow& row);

// The time a comparison shows and ranks: an op case's mean (nccl-tests' number), a workload
// step's p50 (the step table's and the scaling's number, docs/workloads.md).
double compared_time_us(const CaseRecord& r);
// A comparison's busbw cell: "-" for a workload step, which has none.
std::string compared_busbw(const CaseRecord& r);

// time(backend i) / time(backend 0) for a row; nullopt unless both were measured.
std::optional<double> time_ratio(const ComparisonRow& row, size_t backend);

}  // namespace commbench
