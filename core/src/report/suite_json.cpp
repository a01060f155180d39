#include "report/suite_json.h"

namespace commbench {
namespace {

// One communication entry: a case record's identity and its headline figures.
nlohmann::ordered_json communication_entry(const CaseRecord& c) {
  nlohmann::ordered_json j{{"run", c.run},         {"backend", c.backend}, {"world_size", c.world_size},
                           {"bytes", c.bytes},     {"total_bytes", c.total_bytes}, {"dtype", c.dtype},
                           {"memory", c.memory},   {"status", c.status}};
  if (!c.redop.empty()) j["redop"] = c.redop;
  if (c.src >= 0) {
    j["src"] = c.src;
    j["dst"] = c.dst;
  }
  if (c.status == "ok") {
    j["time_us"] = c.time_us.mean;
    j["algbw_gbps"] = c.algbw_gbps;
    j["busbw_gbps"] = c.busbw_gbps;
  } else {
    j["reason"] = c.reason;
  }
  return j;
}

// A training entry: the step record as results.jsonl has it, less the per-iteration arrays.
nlohmann::ordered_json training_entry(const CaseRecord& c) {
  nlohmann::ordered_json j = c;
  j.erase("samples_us");
  j.erase("rank_mean_us");
  return j;
}

}  // namespace

nlohmann::ordered_json suite_json(const JobResult& result, const nlohmann::ordered_json& scaling) {
  // Built apart, then moved in: an ordered_json object is a vector, so a reference into it
  // does not survive the next key's insertion.
  nlohmann::ordered_json comm = nlohmann::ordered_json::object();
  nlohmann::ordered_json training = nlohmann::ordered_json::array();
  for (const CaseRecord& c : result.cases) {
    if (c.op == kTrainingOp) {
      training.push_back(training_entry(c));
      continue;
    }
    auto& by_op = comm[c.op];
    if (!by_op.is_array()) by_op = nlohmann::ordered_json::array();
    by_op.push_back(communication_entry(c));
  }
  nlohmann::ordered_json memory = nlohmann::ordered_json::array();
  for (const KindRecord& r : result.records)
    if (r.kind == kMemoryKind) memory.push_back(r.body);
  nlohmann::ordered_json suite;
  suite["communication"] = std::move(comm);
  suite["training"] = std::move(training);
  suite["memory"] = std::move(memory);
  suite["scaling"] = scaling;
  return suite;
}

}  // namespace commbench
