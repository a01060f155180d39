#include "report/comparison.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "report/format.h"
#include "report/repeat_choice.h"

namespace commbench {
namespace {

size_t index_of(std::vector<std::string>& names, const std::string& name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end()) return static_cast<size_t>(it - names.begin());
  names.push_back(name);
  return names.size() - 1;
}

bool same_table(const ComparisonTable& t, const CaseRecord& r, const std::string& variant) {
  return std::tie(t.op, t.dtype, t.redop, t.placement, t.world_size, t.variant) ==
         std::tie(r.op, r.dtype, r.redop, r.placement, r.world_size, variant);
}

}  // namespace

ComparisonSet compare_backends(const std::vector<std::string>& backend_order,
                               const std::vector<CaseRecord>& records) {
  ComparisonSet set;
  set.backends = backend_order;
  for (const auto& r : records) index_of(set.backends, r.backend);
  // Every record of one case of one backend (its repeats), by (table, row, backend) index.
  std::map<std::tuple<size_t, size_t, size_t>, std::vector<const CaseRecord*>> repeats;

  for (const auto& r : records) {
    const std::string variant = case_variant(r);
    auto table = std::find_if(set.tables.begin(), set.tables.end(),
                              [&](const ComparisonTable& t) { return same_table(t, r, variant); });
    if (table == set.tables.end()) {
      set.tables.push_back({r.op, r.dtype, r.redop, r.placement, r.world_size, variant, {}});
      table = std::prev(set.tables.end());
    }
    auto row = std::find_if(table->rows.begin(), table->rows.end(),
                            [&](const ComparisonRow& x) {
                              return x.bytes == r.bytes && x.src == r.src && x.dst == r.dst;
                            });
    if (row == table->rows.end()) {
      table->rows.push_back({r.bytes, r.count, r.src, r.dst,
                             std::vector<const CaseRecord*>(set.backends.size())});
      row = std::prev(table->rows.end());
    }
    repeats[{static_cast<size_t>(table - set.tables.begin()), static_cast<size_t>(row - table->rows.begin()),
             index_of(set.backends, r.backend)}]
        .push_back(&r);
  }
  // A case measured in several repeats: its median repeat (report/repeat_choice.h).
  for (auto& [where, recs] : repeats) {
    const auto [t, row, backend] = where;
    set.tables[t].rows[row].by_backend[backend] = median_repeat(recs);
    set.max_repeats = std::max(set.max_repeats, static_cast<int>(recs.size()));
  }
  for (auto& t : set.tables)
    std::sort(t.rows.begin(), t.rows.end(),
              [](const ComparisonRow& a, const ComparisonRow& b) {
                return std::tie(a.bytes, a.src, a.dst) < std::tie(b.bytes, b.src, b.dst);
              });
  return set;
}

std::string repeats_note(const ComparisonSet& set) {
  return set.max_repeats > 1
             ? fmt::format("; with {} repeats, each backend's median repeat (by mean time)", set.max_repeats)
             : std::string();
}

std::string row_label(const ComparisonRow& row) {
  std::string label = human_size(row.bytes);
  if (row.src >= 0) label += fmt::format(" {}→{}", row.src, row.dst);
  return label;
}

double compared_time_us(const CaseRecord& r) { return r.workload.is_null() ? r.time_us.mean : r.time_us.p50; }

std::string compared_busbw(const CaseRecord& r) { return r.workload.is_null() ? format_gbps(r.busbw_gbps) : "-"; }

std::optional<double> time_ratio(const ComparisonRow& row, size_t backend) {
  if (backend >= row.by_backend.size() || row.by_backend.empty()) return std::nullopt;
  const CaseRecord* ref = row.by_backend[0];
  const CaseRecord* other = row.by_backend[backend];
  if (!ref || !other || ref->status != "ok" || other->status != "ok") return std::nullopt;
  if (!(compared_time_us(*ref) > 0)) return std::nullopt;
  return compared_time_us(*other) / compared_time_us(*ref);
}

}  // namespace commbench
