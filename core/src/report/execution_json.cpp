#include "report/execution_json.h"

namespace commbench {
namespace {

template <class Json>
void write_info(Json& j, const ExecutionInfo& e) {
  j["run_index"] = e.run_index;
  j["run"] = e.run;
  j["backend"] = e.backend;
  j["world_size"] = e.world_size;
  j["exec_index"] = e.exec_index;
  j["exec_total"] = e.exec_total;
  j["case_total"] = e.case_total;
  j["repeat"] = e.repeat;
  j["timeout_s"] = e.timeout_s;
  if (e.host_load.sampled) j["host_load"] = to_json(e.host_load);
}

template <class Json>
void write_outcome(Json& j, const ExecutionOutcome& o) {
  j = Json::object();
  write_info(j, o.info);
  j["status"] = o.status;
  j["reason"] = o.reason;
  j["failed_rank"] = o.failed_rank;
  j["failure_kind"] = o.failure_kind;
  j["failed_phase"] = o.failed_phase;
  j["plugin_status"] = o.plugin_status;
  j["elapsed_s"] = o.elapsed_s;
  j["cases_done"] = o.cases_done;
  j["metadata"] = o.metadata.is_null() ? nlohmann::json::object() : o.metadata;
  if (!o.clock.is_null()) j["clock"] = o.clock;
}

// Missing or null keeps the default: readers accept files from older writers.
template <class T>
void read_field(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it != j.end() && !it->is_null()) it->get_to(out);
}

}  // namespace

void to_json(nlohmann::json& j, const ExecutionInfo& e) {
  j = nlohmann::json::object();
  write_info(j, e);
}
void to_json(nlohmann::ordered_json& j, const ExecutionInfo& e) {
  j = nlohmann::ordered_json::object();
  write_info(j, e);
}

void from_json(const nlohmann::json& j, ExecutionInfo& e) {
  e = ExecutionInfo{};
  read_field(j, "run_index", e.run_index);
  read_field(j, "run", e.run);
  read_field(j, "backend", e.backend);
  read_field(j, "world_size", e.world_size);
  read_field(j, "exec_index", e.exec_index);
  read_field(j, "exec_total", e.exec_total);
  read_field(j, "case_total", e.case_total);
  read_field(j, "repeat", e.repeat);
  read_field(j, "timeout_s", e.timeout_s);
  if (j.contains("host_load")) from_json(j["host_load"], e.host_load);
}

void to_json(nlohmann::json& j, const ExecutionOutcome& o) { write_outcome(j, o); }
void to_json(nlohmann::ordered_json& j, const ExecutionOutcome& o) { write_outcome(j, o); }

void from_json(const nlohmann::json& j, ExecutionOutcome& o) {
  o = ExecutionOutcome{};
  from_json(j, o.info);
  read_field(j, "status", o.status);
  read_field(j, "reason", o.reason);
  read_field(j, "failed_rank", o.failed_rank);
  read_field(j, "failure_kind", o.failure_kind);
  read_field(j, "failed_phase", o.failed_phase);
  read_field(j, "plugin_status", o.plugin_status);
  read_field(j, "elapsed_s", o.elapsed_s);
  read_field(j, "cases_done", o.cases_done);
  if (auto it = j.find("metadata"); it != j.end()) o.metadata = *it;
  if (auto it = j.find("clock"); it != j.end()) o.clock = *it;
}

}  // namespace commbench
