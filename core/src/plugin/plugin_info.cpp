#include "plugin/plugin_info.h"

#include "plugin/capability_names.h"

namespace commbench {
namespace {

// Capability sets by name (not raw masks) so summary.json and `plugins --json` are readable and
// stay meaningful if bit positions are ever looked up by someone without the header.
struct CapabilityField {
  const char* key;
  CapabilitySet set;
  uint64_t cb_capabilities::*mask;
};
constexpr CapabilityField kCapabilityFields[] = {
    {"ops", CapabilitySet::Ops, &cb_capabilities::ops},
    {"dtypes", CapabilitySet::Dtypes, &cb_capabilities::dtypes},
    {"reduce_dtypes", CapabilitySet::ReduceDtypes, &cb_capabilities::reduce_dtypes},
    {"redops", CapabilitySet::Redops, &cb_capabilities::redops},
    {"mem_types", CapabilitySet::MemTypes, &cb_capabilities::mem_types},
    {"flags", CapabilitySet::Flags, &cb_capabilities::flags},
};

}  // namespace

nlohmann::json to_json(const PluginInfo& p) {
  nlohmann::json caps = nlohmann::json::object();
  for (const auto& f : kCapabilityFields) caps[f.key] = capability_names(f.set, p.caps.*f.mask);

  nlohmann::json j = {
      {"name", p.name},
      {"path", p.path},
      {"version", p.version},
      {"description", p.description},
      {"abi_major", p.abi_major},
      {"abi_minor", p.abi_minor},
      {"capabilities", std::move(caps)},
  };
  if (p.options) {
    j["options"] = nlohmann::json::array();
    for (const auto& o : *p.options) j["options"].push_back(to_json(o));
  }
  if (!p.option_problems.empty()) j["option_problems"] = p.option_problems;
  if (!p.ok()) j["load_error"] = p.load_error;
  if (!p.entry_output.empty()) j["entry_output"] = p.entry_output;
  if (p.entry_threads > 0) j["entry_threads"] = p.entry_threads;
  if (!p.library_output.empty()) j["library_output"] = p.library_output;
  if (p.library_threads > 0) j["library_threads"] = p.library_threads;
  return j;
}

// Tolerant of missing keys: a probe that failed early reports only load_error.
PluginInfo plugin_info_from_json(const nlohmann::json& j) {
  PluginInfo p;
  p.name = j.value("name", "");
  p.path = j.value("path", "");
  p.version = j.value("version", "");
  p.description = j.value("description", "");
  p.abi_major = j.value("abi_major", 0u);
  p.abi_minor = j.value("abi_minor", 0u);
  p.load_error = j.value("load_error", "");
  p.entry_output = j.value("entry_output", "");
  p.entry_threads = j.value("entry_threads", 0);
  p.library_output = j.value("library_output", "");
  p.library_threads = j.value("library_threads", 0);
  if (auto it = j.find("options"); it != j.end() && it->is_array()) {
    p.options.emplace();
    for (const auto& o : *it) p.options->push_back(plugin_option_from_json(o));
  }
  p.option_problems = j.value("option_problems", std::vector<std::string>{});
  p.caps = cb_capabilities{};
  p.caps.struct_size = kCapabilitiesStructSize;
  if (auto it = j.find("capabilities"); it != j.end()) {
    for (const auto& f : kCapabilityFields) {
      if (auto names = it->find(f.key); names != it->end())
        p.caps.*f.mask = capability_mask(f.set, names->get<std::vector<std::string>>());
    }
  }
  return p;
}

}  // namespace commbench
