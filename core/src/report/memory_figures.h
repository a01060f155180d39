// The figures a memory record (docs/output.md, "Memory records") is shown by, in MiB: computed
// per rank next to measured, the device's (cudaMemGetInfo) with memory = "cuda", else host RSS.
// One reading for the console and summary.md.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace commbench {

struct MemoryFigures {
  int batch_size = 0;
  double model_state_mib = 0, activations_mib = 0, total_mib = 0;  // computed
  // A data_parallel run allocates no model state: what it measured is its compute's buffers and
  // what the run held at its fullest (docs/workloads.md, "Memory of a step run").
  bool step_run = false;
  bool device = false;  // measured by cudaMemGetInfo (else host RSS)
  double measured_state_mib = 0, measured_total_mib = 0, backend_mib = 0;
  std::string status, reason;
};

inline MemoryFigures memory_figures(const nlohmann::ordered_json& j) {
  MemoryFigures f;
  auto mib = [](const nlohmann::ordered_json& o, const char* k) {
    return o.is_object() ? static_cast<double>(o.value(k, uint64_t{0})) / (1 << 20) : 0.0;
  };
  const auto measured = j.value("measured", nlohmann::ordered_json::object());
  f.device = measured.contains("device") && measured["device"].is_object();
  f.step_run = j.value("workload", std::string("memory")) == "data_parallel";
  const auto computed = j.value("computed", nlohmann::ordered_json::object());
  const auto m = f.device ? measured["device"] : measured.value("host", nlohmann::ordered_json::object());
  f.batch_size = j.value("batch_size", 0);
  f.model_state_mib = mib(computed, "model_state_bytes");
  f.activations_mib = mib(computed, "activation_bytes");
  f.total_mib = mib(computed, "total_bytes");
  f.measured_state_mib = mib(m, "buffers_bytes");
  f.measured_total_mib = mib(m, "workload_bytes");
  f.backend_mib = mib(m, "backend_bytes");
  f.status = j.value("status", std::string("ok"));
  f.reason = j.value("reason", std::string());
  return f;
}

}  // namespace commbench
