#include "experiment/experiment_json.h"

#include <string>
#include <utility>

#include "commbench/sdk/dtypes.hpp"

namespace commbench {
namespace {

template <class T, class Name>
nlohmann::json names(const std::vector<T>& values, Name name) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& v : values) out.push_back(std::string(name(v)));
  return out;
}

nlohmann::json size_to_json(const SizeSpec& s) {
  nlohmann::json j{{"text", s.text}};
  j[s.elements ? "elements" : "bytes"] = s.value;
  return j;
}

}  // namespace

nlohmann::json run_to_json(const RunSpec& run) {
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& s : run.sizes) sizes.push_back(size_to_json(s));
  nlohmann::json j{
      {"name", run.name},
      {"index", run.index},
      {"backends", run.backends},
      {"ops", names(run.ops, [](OpKind k) { return op_info(k).name; })},
      {"sizes", sizes},
      {"dtypes", names(run.dtypes, sdk::dtype_name)},
      {"redops", names(run.redops, sdk::redop_name)},
      {"placements", names(run.placements, placement_name)},
      {"world_sizes", run.world_sizes},
      {"env", run.env},
      {"options", run.options},
  };
  settings_to_json(run, j);
  // Unset, each execution gets a limit sized to its cases (plan.cpp): there is no one number.
  if (!run.timeout_given) j["timeout_s"] = nullptr;
  return j;
}

nlohmann::json experiment_to_json(const Experiment& exp) {
  nlohmann::json runs = nlohmann::json::array();
  for (const auto& r : exp.runs) runs.push_back(run_to_json(r));
  return nlohmann::json{
      {"name", exp.name},
      {"file", exp.file},
      {"output_dir", exp.output_dir},
      {"seed", exp.seed},
      {"plugin_path", exp.plugin_path},
      {"outputs", exp.outputs.empty() ? nlohmann::json("all") : nlohmann::json(exp.outputs)},
      {"runs", std::move(runs)},  // moved: a copy was a third of validating a large file
      {"report", exp.report},
  };
}

}  // namespace commbench
