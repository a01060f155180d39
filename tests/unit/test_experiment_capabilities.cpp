// check_against_plugins with a synthetic plugin catalog: what a backend cannot do is an error at
// the element that asks for it; what it skips is a warning (recorded as unsupported later).
#include <gtest/gtest.h>

#include "common/memory_staging.h"
#include "experiment/capability_check.h"

namespace commbench {
namespace {

uint64_t bits(std::initializer_list<int> values) {
  uint64_t b = 0;
  for (int v : values) b |= CB_BIT(v);
  return b;
}

PluginInfo plugin(const std::string& name, cb_capabilities caps, std::string load_error = {}) {
  PluginInfo p;
  p.name = name;
  p.path = "/plugins/libcommbench_" + name + ".so";
  p.caps = caps;
  p.caps.struct_size = sizeof(cb_capabilities);
  p.load_error = std::move(load_error);
  return p;
}

// Like Gloo: every op, host memory only, no fp8 at all, no bf16 reductions, no avg.
cb_capabilities gloo_like() {
  cb_capabilities c{};
  c.ops = bits({CB_OP_ALLREDUCE, CB_OP_ALLGATHER, CB_OP_REDUCESCATTER, CB_OP_BROADCAST,
                CB_OP_REDUCE, CB_OP_ALLTOALL, CB_OP_GATHER, CB_OP_SCATTER, CB_OP_BARRIER,
                CB_OP_SEND, CB_OP_RECV});
  c.dtypes = bits({CB_DTYPE_INT8, CB_DTYPE_UINT8, CB_DTYPE_INT32, CB_DTYPE_F16, CB_DTYPE_BF16,
                   CB_DTYPE_F32, CB_DTYPE_F64});
  c.reduce_dtypes = bits({CB_DTYPE_INT32, CB_DTYPE_F16, CB_DTYPE_F32, CB_DTYPE_F64});
  c.redops = bits({CB_REDOP_SUM, CB_REDOP_PROD, CB_REDOP_MIN, CB_REDOP_MAX});
  c.mem_types = bits({CB_MEM_HOST});
  c.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE;
  return c;
}

// Collectives only, out of place only: no send/recv for the p2p patterns.
cb_capabilities collectives_only() {
  cb_capabilities c = gloo_like();
  c.ops &= ~bits({CB_OP_SEND, CB_OP_RECV, CB_OP_ALLTOALL});
  c.mem_types = bits({CB_MEM_HOST, CB_MEM_CUDA});
  c.flags = CB_CAP_OUT_OF_PLACE;
  return c;
}

PluginCatalog catalog() {
  return {{"gloo", plugin("gloo", gloo_like())},
          {"coll", plugin("coll", collectives_only())},
          {"broken", plugin("broken", {}, "undefined symbol: ncclCommInitRank")}};
}

Experiment parse(const std::string& text) {
  ParseResult r = parse_experiment_string(text, "caps.toml");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.format();
  if (!r.experiment) throw std::runtime_error("experiment did not parse");
  return *r.experiment;
}

std::vector<std::string> formatted(const std::vector<Diagnostic>& diags) {
  std::vector<std::string> out;
  for (const auto& d : diags) out.push_back(d.format());
  return out;
}

TEST(CapabilityCheck, SupportedRunHasNoDiagnostics) {
  const Experiment exp = parse(R"(name = "ok"
[[run]]
backend = "gloo"
ops = ["allreduce", "allgather", "pingpong", "barrier"]
sizes = ["4KiB"]
placement = ["in_place", "out_of_place"]
)");
  EXPECT_TRUE(check_against_plugins(exp, catalog()).empty());
}

TEST(CapabilityCheck, UnknownAndBrokenBackendsAreErrorsAtTheirElement) {
  const Experiment exp = parse(R"(name = "backends"
[[run]]
backends = ["gloo", "glo", "ucx", "broken"]
op = "allreduce"
sizes = ["4KiB"]
)");
  EXPECT_EQ(formatted(check_against_plugins(exp, catalog())),
            (std::vector<std::string>{
                "caps.toml:3:21: error: no plugin named 'glo' on the search path; found: broken, "
                "coll, gloo; did you mean 'gloo'?",
                "caps.toml:3:28: error: no plugin named 'ucx' on the search path; found: broken, "
                "coll, gloo",
                "caps.toml:3:35: error: plugin 'broken' (/plugins/libcommbench_broken.so) cannot be "
                "used: undefined symbol: ncclCommInitRank; fix or remove that file (the first 'broken' on the "
                "plugin search path is the one used; `commbench plugins broken` lists any it hides)",
            }));
}

TEST(CapabilityCheck, EmptyCatalogSaysWhereToLook) {
  const Experiment exp = parse(R"(name = "none"
[[run]]
backend = "gloo"
op = "allreduce"
sizes = ["4KiB"]
)");
  const auto diags = check_against_plugins(exp, {});
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].message,
            "no plugin named 'gloo' on the search path; found none (add a directory to "
            "COMMBENCH_PLUGIN_PATH or to the experiment's plugin_path)");
}

TEST(CapabilityCheck, OpsAndMemoryTheBackendLacksAreErrors) {
  const Experiment exp = parse(R"(name = "ops"
[[run]]
backends = ["gloo", "coll"]
ops = ["allreduce", "alltoall", "sendrecv"]
sizes = ["4KiB"]
memory = "host_pinned"
)");
  EXPECT_EQ(formatted(check_against_plugins(exp, catalog())),
            (std::vector<std::string>{
                // What it supports, and what to write (a probe: no next step was given).
                "caps.toml:6:10: error: backend 'gloo' does not support memory type 'host_pinned'; it supports host, "
                "cuda: set memory = \"host\" (quick: --memory host)",
                "caps.toml:4:21: error: backend 'coll' does not support 'alltoall'",
                "caps.toml:4:33: error: backend 'coll' cannot run 'sendrecv': it needs send and recv",
                "caps.toml:6:10: error: backend 'coll' does not support memory type 'host_pinned'; it supports host, "
                "cuda: set memory = \"host\" (quick: --memory host)",
            }));
}

// memory = "cuda" on a host-memory backend that is not stream-ordered is staged through pinned
// host buffers (common/memory_staging.h); a stream-ordered backend without cuda memory is not.
TEST(CapabilityCheck, CudaMemoryOnAHostBackendIsStagedNotRefused) {
  const Experiment exp = parse(R"(name = "staged"
[[run]]
backends = ["gloo"]
ops = ["allreduce"]
sizes = ["4KiB"]
memory = "cuda"
)");
  EXPECT_TRUE(check_against_plugins(exp, catalog()).empty());
  cb_capabilities stream_host_only = gloo_like();
  stream_host_only.flags |= CB_CAP_STREAM_ORDERED;
  const MemoryPlan staged = plan_memory(gloo_like(), CB_MEM_CUDA);
  EXPECT_TRUE(staged.usable && staged.staged);
  EXPECT_EQ(staged.op_memory, CB_MEM_HOST);
  EXPECT_STREQ(staging_name(staged), "host_pinned");
  EXPECT_FALSE(plan_memory(stream_host_only, CB_MEM_CUDA).usable);
  const MemoryPlan direct = plan_memory(collectives_only(), CB_MEM_CUDA);
  EXPECT_TRUE(direct.usable && !direct.staged);
  EXPECT_EQ(direct.op_memory, CB_MEM_CUDA);
  EXPECT_STREQ(staging_name(direct), "");
  EXPECT_FALSE(plan_memory(gloo_like(), CB_MEM_HOST_PINNED).usable);
}

TEST(CapabilityCheck, UnsupportedDtypesRedopsAndPlacementsAreWarnings) {
  const Experiment exp = parse(R"(name = "dtypes"
[[run]]
backends = ["gloo", "coll"]
ops = ["allreduce", "allgather"]
sizes = ["4KiB"]
dtypes = ["f32", "bf16", "f8e4m3"]
redops = ["sum", "avg"]
placement = ["in_place"]
)");
  const auto diags = check_against_plugins(exp, catalog());
  for (const auto& d : diags) EXPECT_EQ(d.severity, Diagnostic::Severity::Warning) << d.format();
  // bf16 is fine: allgather moves it even though allreduce cannot reduce it.
  EXPECT_EQ(formatted(diags),
            (std::vector<std::string>{
                "caps.toml:6:26: warning: backend 'gloo' supports f8e4m3 for none of this run's "
                "ops; those cases will be recorded as unsupported",
                "caps.toml:7:18: warning: backend 'gloo' does not support reduce op 'avg'; those "
                "cases will be recorded as unsupported",
                "caps.toml:6:26: warning: backend 'coll' supports f8e4m3 for none of this run's "
                "ops; those cases will be recorded as unsupported",
                "caps.toml:7:18: warning: backend 'coll' does not support reduce op 'avg'; those "
                "cases will be recorded as unsupported",
                "caps.toml:8:14: warning: backend 'coll' does not support in_place buffers; those "
                "cases will be recorded as unsupported",
            }));
}

TEST(CapabilityCheck, ReductionOnlyRunsJudgeDtypesByReduceDtypes) {
  const Experiment exp = parse(R"(name = "reduce"
[[run]]
backend = "gloo"
op = "allreduce"
sizes = ["4KiB"]
dtypes = ["f32", "bf16"]
)");
  const auto diags = check_against_plugins(exp, catalog());
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].pos.column, 18);
  EXPECT_EQ(diags[0].message,
            "backend 'gloo' supports bf16 for none of this run's ops; those cases will be recorded "
            "as unsupported");
}

TEST(CapabilityCheck, InheritedBackendIsReportedOnce) {
  const Experiment exp = parse(R"(name = "inherited"
[defaults]
backend = "ucx"
op = "allreduce"
sizes = ["4KiB"]
[[run]]
[[run]]
)");
  const auto diags = check_against_plugins(exp, catalog());
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].pos.line, 3);
}

}  // namespace
}  // namespace commbench
