#include "report/repeat_choice.h"

#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "common/ops.h"

namespace commbench {

std::string case_variant(const CaseRecord& r) {
  if (r.workload.is_object()) {
    const nlohmann::json& w = r.workload;
    return fmt::format("{} {}, overlap {}, batch {}/rank", w.value("model", std::string("?")),
                       w.value("sharding", std::string("?")), w.value("overlap", false) ? "on" : "off",
                       w.value("batch_size", 0));
  }
  const auto kind = parse_op_kind(r.op);
  if (kind && op_info(*kind).rooted) return fmt::format("root {}", r.root);
  return {};
}

const CaseRecord* median_repeat(std::vector<const CaseRecord*> repeats) {
  std::vector<const CaseRecord*> ok;
  for (const CaseRecord* r : repeats)
    if (r->status == "ok") ok.push_back(r);
  if (ok.empty()) return repeats.front();
  std::stable_sort(ok.begin(), ok.end(),
                   [](const CaseRecord* a, const CaseRecord* b) { return a->time_us.mean < b->time_us.mean; });
  return ok[(ok.size() - 1) / 2];
}

std::vector<const CaseRecord*> one_per_case(const std::vector<const CaseRecord*>& records) {
  using Key = std::tuple<int, std::string, int, std::string, uint64_t, std::string, std::string, std::string,
                         std::string, int, int, int, std::string, std::string, std::string>;
  std::map<Key, size_t> index;
  std::vector<std::vector<const CaseRecord*>> cases;
  for (const CaseRecord* r : records) {
    const Key key{r->run_index, r->backend,   r->world_size, r->op,   r->bytes,
                  r->dtype,     r->redop,     r->placement,  r->memory, r->root,
                  r->src,       r->dst,       r->method,     r->rank_aggregation, case_variant(*r)};
    const auto [it, added] = index.emplace(key, cases.size());
    if (added) cases.emplace_back();
    cases[it->second].push_back(r);
  }
  std::vector<const CaseRecord*> out;
  for (const auto& repeats : cases) out.push_back(median_repeat(repeats));
  return out;
}

std::vector<const CaseRecord*> one_per_case(const std::vector<CaseRecord>& records) {
  std::vector<const CaseRecord*> all;
  for (const CaseRecord& r : records) all.push_back(&r);
  return one_per_case(all);
}

}  // namespace commbench
