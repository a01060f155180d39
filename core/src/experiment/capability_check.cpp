#include "experiment/capability_check.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commbench/sdk/dtypes.hpp"
#include "common/memory_staging.h"
#include "experiment/did_you_mean.h"
#include "experiment/option_check.h"

namespace commbench {
namespace {

bool has_bit(uint64_t set, int bit) { return (set >> bit) & 1u; }

// The ABI ops an op needs: p2p patterns are built from send and recv.
bool backend_can(const cb_capabilities& caps, const OpInfo& op) {
  if (op.point_to_point) return has_bit(caps.ops, CB_OP_SEND) && has_bit(caps.ops, CB_OP_RECV);
  return has_bit(caps.ops, op.abi_op);
}

std::string missing_backend_message(const std::string& name, const PluginCatalog& plugins) {
  std::vector<std::string_view> found;
  for (const auto& [n, info] : plugins) found.push_back(n);
  if (found.empty())
    return fmt::format("no plugin named '{}' on the search path; found none (add a directory to "
                       "COMMBENCH_PLUGIN_PATH or to the experiment's plugin_path)",
                       name);
  return fmt::format("no plugin named '{}' on the search path; found: {}{}", name,
                     fmt::join(found, ", "), did_you_mean(name, found));
}

class RunChecker {
 public:
  RunChecker(const RunSpec& run, std::vector<Diagnostic>& out) : run_(run), out_(out) {}

  void check(const PluginCatalog& plugins) {
    for (size_t b = 0; b < run_.backends.size(); ++b) {
      const std::string& name = run_.backends[b];
      const std::string at = fmt::format("backends[{}]", b);
      auto it = plugins.find(name);
      if (it == plugins.end()) {
        error(at, missing_backend_message(name, plugins));
        continue;
      }
      const PluginInfo& info = it->second;
      if (!info.ok()) {
        // The first file of a name on the search path is the one used: a broken copy earlier on
        // the path hides a working one further down (`commbench plugins NAME` lists what it hides).
        error(at, fmt::format("plugin '{}' ({}) cannot be used: {}; fix or remove that file (the first '{}' on the "
                              "plugin search path is the one used; `commbench plugins {}` lists any it hides)",
                              name, info.path, info.load_error, name, name));
        continue;
      }
      check_backend(name, info.caps);
      check_backend_options(run_, name, info, out_);
    }
  }

 private:
  void check_backend(const std::string& name, const cb_capabilities& caps) {
    bool any_reduction = false, any_data_op = false;
    for (size_t j = 0; j < run_.ops.size(); ++j) {
      const OpInfo& op = op_info(run_.ops[j]);
      any_reduction = any_reduction || op.reduction;
      any_data_op = any_data_op || (op.kind != OpKind::Barrier && !op.reduction);
      if (!backend_can(caps, op))
        error(fmt::format("ops[{}]", j),
              op.point_to_point
                  ? fmt::format("backend '{}' cannot run '{}': it needs send and recv", name, op.name)
                  : fmt::format("backend '{}' does not support '{}'", name, op.name));
    }
    if (!plan_memory(caps, run_.memory).usable) {
      // What to write instead: `quick --backend nccl` ran on host memory (the default) and was
      // told only that nccl cannot, not that memory = "cuda" (quick: --memory cuda) can.
      std::vector<std::string> usable;
      for (int m = 0; m < CB_MEM_COUNT_V1; ++m)
        if (plan_memory(caps, static_cast<cb_mem>(m)).usable) usable.emplace_back(sdk::mem_name(static_cast<cb_mem>(m)));
      const std::string next =
          usable.empty() ? "it supports no memory type"
                         : fmt::format("it supports {}: set memory = \"{}\" (quick: --memory {})",
                                       fmt::join(usable, ", "), usable.front(), usable.front());
      error("memory", fmt::format("backend '{}' does not support memory type '{}'; {}", name,
                                  sdk::mem_name(run_.memory), next));
    }

    // Unsupported dtypes and redops are not errors: those cases are recorded as unsupported.
    for (size_t d = 0; d < run_.dtypes.size(); ++d) {
      const int bit = run_.dtypes[d];
      const bool usable = (any_reduction && has_bit(caps.reduce_dtypes, bit)) ||
                          (any_data_op && has_bit(caps.dtypes, bit));
      if (!usable && (any_reduction || any_data_op))
        warning(fmt::format("dtypes[{}]", d),
                fmt::format("backend '{}' supports {} for none of this run's ops; those cases will "
                            "be recorded as unsupported",
                            name, sdk::dtype_name(run_.dtypes[d])));
    }
    if (any_reduction) {
      for (size_t r = 0; r < run_.redops.size(); ++r)
        if (!has_bit(caps.redops, run_.redops[r]))
          warning(fmt::format("redops[{}]", r),
                  fmt::format("backend '{}' does not support reduce op '{}'; those cases will be "
                              "recorded as unsupported",
                              name, sdk::redop_name(run_.redops[r])));
    }
    for (size_t p = 0; p < run_.placements.size(); ++p) {
      const bool in_place = run_.placements[p] == Placement::InPlace;
      if (!(caps.flags & (in_place ? CB_CAP_IN_PLACE : CB_CAP_OUT_OF_PLACE)))
        warning(fmt::format("placement[{}]", p),
                fmt::format("backend '{}' does not support {} buffers; those cases will be "
                            "recorded as unsupported",
                            name, placement_name(run_.placements[p])));
    }
  }

  void error(const std::string& key, std::string message) {
    out_.push_back(Diagnostic{Diagnostic::Severity::Error, run_.pos_of(key), std::move(message)});
  }
  void warning(const std::string& key, std::string message) {
    out_.push_back(Diagnostic{Diagnostic::Severity::Warning, run_.pos_of(key), std::move(message)});
  }

  const RunSpec& run_;
  std::vector<Diagnostic>& out_;
};

}  // namespace

std::vector<Diagnostic> check_against_plugins(const Experiment& exp, const PluginCatalog& plugins) {
  std::vector<Diagnostic> out;
  for (const auto& run : exp.runs) RunChecker(run, out).check(plugins);
  // Runs inheriting a backend from [defaults] point at the same place: say it once.
  std::vector<Diagnostic> unique;
  for (auto& d : out) {
    const bool seen = std::any_of(unique.begin(), unique.end(), [&](const Diagnostic& u) {
      return u.format() == d.format();
    });
    if (!seen) unique.push_back(std::move(d));
  }
  return unique;
}

}  // namespace commbench
