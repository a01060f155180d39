#include "measure/case_record.h"

#include <cmath>
#include <limits>

namespace commbench {

std::string_view check_stage_name(CheckStage s) {
  return s == CheckStage::AfterTiming ? "after_timing" : "first_iteration";
}

namespace {

template <class Json>
Json wrong_element_json(const WrongElement& w) {
  Json j = Json::object();
  j["rank"] = w.rank;
  j["index"] = w.index;
  j["expected"] = w.expected;
  j["got"] = w.got;  // NaN is written as null
  j["check"] = w.check;
  if (w.buffer != "recv") j["buffer"] = w.buffer;  // absent: the receive buffer
  return j;
}

// JSON keys are the struct's field names, one for one, so that results.jsonl, summary.json and
// the C++ struct read the same. Declaration order is kept for the ordered_json flavour.
template <class Json>
void write_case(Json& j, const CaseRecord& r) {
  j = Json::object();
  j["experiment"] = r.experiment;
  j["run"] = r.run;
  j["run_index"] = r.run_index;
  j["repeat"] = r.repeat;
  j["backend"] = r.backend;
  j["world_size"] = r.world_size;
  j["op"] = r.op;
  j["bytes"] = r.bytes;
  j["total_bytes"] = r.total_bytes;
  j["count"] = r.count;
  if (r.job_bytes > 0) j["job_bytes"] = r.job_bytes;
  j["dtype"] = r.dtype;
  j["redop"] = r.redop;
  j["placement"] = r.placement;
  j["memory"] = r.memory;
  j["root"] = r.root;
  j["src"] = r.src;
  j["dst"] = r.dst;
  if (!r.peers.empty()) j["peers"] = r.peers;
  if (r.window > 0) j["window"] = r.window;
  if (!r.options.empty()) j["options"] = r.options;
  if (!r.env.empty()) j["env"] = r.env;
  j["status"] = r.status;
  j["reason"] = r.reason;
  if (!r.failure_kind.empty()) j["failure_kind"] = r.failure_kind;
  j["method"] = r.method;
  j["rank_aggregation"] = r.rank_aggregation;
  j["timing"] = r.timing;
  if (!r.staging.empty()) j["staging"] = r.staging;  // absent: the backend works on the memory itself
  if (r.oversubscribe_gpu) j["oversubscribe_gpu"] = true;  // absent: one GPU per rank
  if (!r.cpu_binding.empty()) j["cpu_binding"] = r.cpu_binding;  // absent: ranks not bound by commbench
  j["warmup"] = r.warmup;
  j["iterations"] = r.iterations;
  j["time_us"] = r.time_us;
  j["algbw_gbps"] = r.algbw_gbps;
  j["busbw_gbps"] = r.busbw_gbps;
  j["msg_rate_mps"] = r.msg_rate_mps;
  if (r.host_us_per_op > 0) j["host_us_per_op"] = r.host_us_per_op;
  if (r.timed_page_faults >= 0) j["timed_page_faults"] = r.timed_page_faults;
  j["wrong"] = r.wrong;
  if (r.first_wrong) j["first_wrong"] = wrong_element_json<Json>(*r.first_wrong);
  if (!r.telemetry.is_null()) j["telemetry"] = Json(r.telemetry);  // absent: telemetry off
  if (!r.workload.is_null()) j["workload"] = Json(r.workload);     // absent: an op case
  if (r.target_cv > 0) {  // absent: the case ran a fixed number of iterations
    j["target_cv"] = r.target_cv;
    j["cv_reached"] = r.cv_reached;
  }
  j["rank_mean_us"] = r.rank_mean_us;
  j["samples_us"] = r.samples_us;
}

// A missing (older writer) or null (NaN written by nlohmann) field keeps the struct's default;
// a field of the wrong type throws nlohmann's type_error, which names the expected type.
template <class T>
void read_field(const nlohmann::json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  it->get_to(out);
}

}  // namespace

void to_json(nlohmann::json& j, const CaseRecord& r) { write_case(j, r); }
void to_json(nlohmann::ordered_json& j, const CaseRecord& r) { write_case(j, r); }

void from_json(const nlohmann::json& j, CaseRecord& r) {
  r = CaseRecord{};
  // Unknown keys ("type", "schema_version", fields added by newer versions) are ignored.
  read_field(j, "experiment", r.experiment);
  read_field(j, "run", r.run);
  read_field(j, "run_index", r.run_index);
  read_field(j, "repeat", r.repeat);
  read_field(j, "backend", r.backend);
  read_field(j, "world_size", r.world_size);
  read_field(j, "op", r.op);
  read_field(j, "bytes", r.bytes);
  read_field(j, "total_bytes", r.total_bytes);
  read_field(j, "count", r.count);
  read_field(j, "job_bytes", r.job_bytes);
  read_field(j, "dtype", r.dtype);
  read_field(j, "redop", r.redop);
  read_field(j, "placement", r.placement);
  read_field(j, "memory", r.memory);
  read_field(j, "root", r.root);
  read_field(j, "src", r.src);
  read_field(j, "dst", r.dst);
  read_field(j, "peers", r.peers);
  read_field(j, "window", r.window);
  read_field(j, "options", r.options);
  read_field(j, "env", r.env);
  read_field(j, "status", r.status);
  read_field(j, "reason", r.reason);
  read_field(j, "failure_kind", r.failure_kind);
  read_field(j, "method", r.method);
  read_field(j, "rank_aggregation", r.rank_aggregation);
  read_field(j, "timing", r.timing);
  read_field(j, "staging", r.staging);
  read_field(j, "oversubscribe_gpu", r.oversubscribe_gpu);
  read_field(j, "cpu_binding", r.cpu_binding);
  read_field(j, "host_us_per_op", r.host_us_per_op);
  read_field(j, "timed_page_faults", r.timed_page_faults);
  read_field(j, "telemetry", r.telemetry);
  read_field(j, "workload", r.workload);
  read_field(j, "warmup", r.warmup);
  read_field(j, "iterations", r.iterations);
  read_field(j, "time_us", r.time_us);
  read_field(j, "algbw_gbps", r.algbw_gbps);
  read_field(j, "busbw_gbps", r.busbw_gbps);
  read_field(j, "msg_rate_mps", r.msg_rate_mps);
  read_field(j, "wrong", r.wrong);
  if (auto it = j.find("first_wrong"); it != j.end() && it->is_object()) {
    WrongElement w;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    read_field(*it, "rank", w.rank);
    read_field(*it, "index", w.index);
    w.expected = it->contains("expected") && !(*it)["expected"].is_null() ? (*it)["expected"].get<double>() : nan;
    w.got = it->contains("got") && !(*it)["got"].is_null() ? (*it)["got"].get<double>() : nan;
    read_field(*it, "check", w.check);
    read_field(*it, "buffer", w.buffer);
    r.first_wrong = w;
  }
  read_field(j, "target_cv", r.target_cv);
  read_field(j, "cv_reached", r.cv_reached);
  read_field(j, "rank_mean_us", r.rank_mean_us);
  read_field(j, "samples_us", r.samples_us);
}

}  // namespace commbench
