#include "report/pair_matrix.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "report/format.h"
#include "report/markdown_table.h"
#include "report/repeat_choice.h"

namespace commbench {
namespace {

using MatrixKey = std::tuple<std::string, int, std::string, uint64_t>;  // backend, world, dtype, bytes

void append_matrix(std::string& md, int world, const std::map<std::pair<int, int>, const CaseRecord*>& cells,
                   const char* title, std::string (*value)(const CaseRecord&)) {
  md += fmt::format("{} (rows: src, columns: dst)\n\n", title);
  std::vector<MarkdownColumn> columns{{"src \\ dst", false}};
  for (int d = 0; d < world; ++d) columns.push_back({fmt::format("{}", d), true});
  std::vector<std::vector<std::string>> rows;
  for (int s = 0; s < world; ++s) {
    std::vector<std::string> row{fmt::format("**{}**", s)};
    for (int d = 0; d < world; ++d) {
      if (s == d) {
        row.push_back("·");
        continue;
      }
      const auto it = cells.find({s, d});
      if (it == cells.end()) row.push_back("-");
      else if (it->second->status != "ok") row.push_back(markdown_cell(it->second->status));
      else row.push_back(value(*it->second));
    }
    rows.push_back(std::move(row));
  }
  append_markdown_table(md, columns, rows);
}

}  // namespace

void append_pair_matrices(std::string& md, const std::vector<const CaseRecord*>& cases) {
  std::map<MatrixKey, std::map<std::pair<int, int>, const CaseRecord*>> matrices;
  std::vector<MatrixKey> order;  // backends in order of appearance, sizes ascending within
  int repeats = 1;  // the most records one pair has: with `repeats`, each pair's median repeat
  {
    std::map<std::tuple<int, std::string, int, std::string, uint64_t, int, int>, int> seen;
    for (const CaseRecord* c : cases)
      if (c->src >= 0)
        repeats = std::max(repeats, ++seen[{c->run_index, c->backend, c->world_size, c->dtype, c->bytes, c->src, c->dst}]);
  }
  for (const CaseRecord* c : one_per_case(cases)) {
    if (c->src < 0) continue;
    const MatrixKey key{c->backend, c->world_size, c->dtype, c->bytes};
    if (!matrices.count(key)) order.push_back(key);
    matrices[key][{c->src, c->dst}] = c;
  }
  // Groups (backend, world size) in order of appearance, sizes ascending within each.
  std::map<std::pair<std::string, int>, size_t> group;
  for (const MatrixKey& k : order) group.emplace(std::pair{std::get<0>(k), std::get<1>(k)}, group.size());
  std::sort(order.begin(), order.end(), [&](const MatrixKey& a, const MatrixKey& b) {
    const size_t ga = group.at({std::get<0>(a), std::get<1>(a)});
    const size_t gb = group.at({std::get<0>(b), std::get<1>(b)});
    return std::tie(ga, std::get<3>(a), std::get<2>(a)) < std::tie(gb, std::get<3>(b), std::get<2>(b));
  });
  for (const MatrixKey& key : order) {
    const auto& [backend, world, dtype, bytes] = key;
    const auto& cells = matrices[key];
    const CaseRecord* any = cells.begin()->second;
    md += fmt::format("### all_pairs · {} · {} ranks · {} ({} B) · {} · {} repetitions\n\n", backend,
                      world, human_size(bytes), bytes, dtype, any->iterations);
    if (repeats > 1)
      md += fmt::format("With {} repeats: each pair's median repeat (by mean time).\n\n", repeats);
    append_matrix(md, world, cells, "Bandwidth, GB/s",
                  [](const CaseRecord& r) { return format_gbps(r.algbw_gbps); });
    append_matrix(md, world, cells, "Latency, p50 us",
                  [](const CaseRecord& r) { return format_time_us(r.time_us.p50); });
  }
}

}  // namespace commbench
