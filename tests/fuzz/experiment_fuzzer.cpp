// libFuzzer target: the TOML experiment loader, fed arbitrary text as a user (or a script gone
// wrong) could write it: parse, validate against a fake plugin catalog, plan, and render the
// canonical JSON, as `commbench validate` does. Properties beyond "no crash, no sanitizer report,
// no hang": an experiment comes back exactly when there is no error, every error has a message,
// and a valid experiment plans into executions whose cases are all well-formed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "commbench/sdk/dtypes.hpp"
#include "experiment/capability_check.h"
#include "experiment/experiment.h"
#include "plan/plan.h"

using namespace commbench;

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

PluginInfo fake_plugin(const char* name, uint64_t ops, uint64_t mem) {
  PluginInfo p;
  p.name = name;
  p.path = std::string("/fake/libcommbench_backend_") + name + ".so";
  p.version = "0";
  p.abi_major = 1;
  p.caps.struct_size = kCapabilitiesStructSize;
  p.caps.ops = ops;
  p.caps.mem_types = mem;
  p.caps.dtypes = ~0ull;
  p.caps.reduce_dtypes = ~0ull;
  p.caps.redops = ~0ull;
  p.caps.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE;
  return p;
}

const PluginCatalog& catalog() {
  static const PluginCatalog c = [] {
    PluginCatalog out;
    out["gloo"] = fake_plugin("gloo", ~0ull, CB_BIT(CB_MEM_HOST));
    out["ucx"] = fake_plugin("ucx", CB_BIT(CB_OP_SEND) | CB_BIT(CB_OP_RECV) | CB_BIT(CB_OP_BARRIER),
                             CB_BIT(CB_MEM_HOST) | CB_BIT(CB_MEM_HOST_PINNED));
    out["nccl"] = fake_plugin("nccl", ~0ull, CB_BIT(CB_MEM_CUDA));
    return out;
  }();
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const ParseResult r = parse_experiment_string(text, "fuzz.toml");
  check(r.experiment.has_value() != has_errors(r.diagnostics));
  for (const Diagnostic& d : r.diagnostics) check(!d.message.empty() && d.pos.line >= 0 && d.pos.column >= 0);
  if (!r.experiment) return 0;

  const auto diags = check_against_plugins(*r.experiment, catalog());
  for (const Diagnostic& d : diags) check(!d.message.empty());
  (void)r.experiment->as_parsed.dump();
  if (has_errors(diags)) return 0;
  for (const Execution& e : plan_job(*r.experiment)) {
    check(e.world_size >= 1 && e.timeout_s > 0 && e.timeout_s <= 7 * 24 * 3600.0);
    check(expected_records(e) >= 0);
    for (const CaseSpec& c : e.cases) check(c.bytes == c.count * sdk::dtype_size(c.dtype));
  }
  return 0;
}
