// Parsing good experiment files: every field, defaults merging, size shapes, positions, JSON.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commbench/sdk/dtypes.hpp"
#include "experiment/experiment.h"

namespace commbench {
namespace {

namespace fs = std::filesystem;

const fs::path kGoodDir = fs::path(COMMBENCH_TEST_DATA_DIR) / "experiments" / "good";

Experiment parse_good(const std::string& name) {
  const ParseResult r = parse_experiment_file((kGoodDir / name).string());
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.format();
  if (!r.experiment) throw std::runtime_error(name + " did not parse");
  return *r.experiment;
}

// Parses text that must be valid; returns the experiment (warnings allowed, returned too).
Experiment parse_ok(const std::string& text, std::vector<Diagnostic>* warnings = nullptr) {
  ParseResult r = parse_experiment_string(text, "inline.toml");
  for (const auto& d : r.diagnostics)
    if (d.severity == Diagnostic::Severity::Error) ADD_FAILURE() << d.format();
  if (warnings) *warnings = r.diagnostics;
  if (!r.experiment) throw std::runtime_error("inline text did not parse");
  return *r.experiment;
}

std::vector<uint64_t> size_values(const RunSpec& run) {
  std::vector<uint64_t> out;
  for (const auto& s : run.sizes) out.push_back(s.value);
  return out;
}

TEST(ExperimentParse, FullSchemaSetsEveryField) {
  const Experiment exp = parse_good("full_schema.toml");
  EXPECT_EQ(exp.name, "full-schema");
  EXPECT_EQ(exp.output_dir, "out/full");
  EXPECT_EQ(exp.seed, 7u);
  ASSERT_EQ(exp.runs.size(), 1u);
  const RunSpec& r = exp.runs[0];
  EXPECT_EQ(r.name, "everything");
  EXPECT_EQ(r.index, 0);
  EXPECT_EQ(r.backends, (std::vector<std::string>{"gloo", "mock"}));
  EXPECT_EQ(r.ops, (std::vector<OpKind>{OpKind::Broadcast, OpKind::PingPong, OpKind::UnidirBw,
                                       OpKind::Reduce}));
  EXPECT_EQ(size_values(r), (std::vector<uint64_t>{1024, 8192, 1572864, 3000000}));
  EXPECT_EQ(r.dtypes, (std::vector<cb_dtype>{CB_DTYPE_F32, CB_DTYPE_INT64}));
  EXPECT_EQ(r.redops, std::vector<cb_redop>{CB_REDOP_MAX});
  EXPECT_EQ(r.memory, CB_MEM_HOST_PINNED);
  EXPECT_EQ(r.warmup, 2);
  EXPECT_EQ(r.iterations, 7);
  EXPECT_DOUBLE_EQ(r.min_time_s, 0.25);
  EXPECT_EQ(r.max_iterations, 500);
  EXPECT_EQ(r.placements, (std::vector<Placement>{Placement::InPlace, Placement::OutOfPlace}));
  EXPECT_FALSE(r.check);
  EXPECT_EQ(r.world_sizes, (std::vector<int>{2, 4}));
  EXPECT_DOUBLE_EQ(r.timeout_s, 120);
  EXPECT_EQ(r.root, 1);
  EXPECT_EQ(r.window, 16);
  EXPECT_EQ(r.peers, (std::vector<int>{1, 0}));
}

TEST(ExperimentParse, EnvAndOptionValuesAreRenderedAsTomlWritesThem) {
  const RunSpec r = parse_good("full_schema.toml").runs[0];
  EXPECT_EQ(r.env, (std::map<std::string, std::string>{
                       {"GLOO_LOG_LEVEL", "DEBUG"}, {"RETRIES", "3"}, {"VERBOSE", "true"}}));
  ASSERT_EQ(r.options.count("gloo"), 1u);
  EXPECT_EQ(r.options.at("gloo"), (std::map<std::string, std::string>{
                                      {"algorithm", "ring_chunked"},
                                      {"chunks", "4"},
                                      {"ratio", "0.5"},
                                      {"pin", "false"}}));
  EXPECT_EQ(r.options.count("mock"), 0u);
}

TEST(ExperimentParse, PluginPathIsResolvedAgainstTheFilesDirectory) {
  const Experiment exp = parse_good("full_schema.toml");
  ASSERT_EQ(exp.plugin_path.size(), 2u);
  EXPECT_EQ(exp.plugin_path[0], (fs::absolute(kGoodDir) / "plugins").lexically_normal().string());
  EXPECT_EQ(exp.plugin_path[1], "/opt/commbench/plugins");
}

TEST(ExperimentParse, WhereRecordsElementPositions) {
  const RunSpec r = parse_good("full_schema.toml").runs[0];
  EXPECT_EQ(r.pos.line, 7);  // [[run]]
  EXPECT_EQ(r.pos_of("backends[1]").line, 9);
  EXPECT_EQ(r.pos_of("backends[1]").column, 21);
  EXPECT_EQ(r.pos_of("ops[2]").column, 33);
  EXPECT_EQ(r.pos_of("memory").line, 14);
  EXPECT_EQ(r.pos_of("memory").column, 10);
  EXPECT_EQ(r.pos_of("options.gloo.chunks").line, 30);
  EXPECT_NE(r.pos_of("sizes[3]").file.find("full_schema.toml"), std::string::npos);
  // Unknown element keys fall back to the key, then to the [[run]] header.
  EXPECT_EQ(r.pos_of("ops[9]").line, r.pos_of("ops").line);
  EXPECT_EQ(r.pos_of("no_such_key").line, 7);
}

TEST(ExperimentParse, BuiltInDefaults) {
  const Experiment exp = parse_ok(R"(
name = "defaults"
[[run]]
backend = "gloo"
op = "allreduce"
sizes = [4096]
)");
  EXPECT_EQ(exp.output_dir, "results");
  EXPECT_EQ(exp.seed, 42u);
  EXPECT_TRUE(exp.plugin_path.empty());
  const RunSpec& r = exp.runs[0];
  EXPECT_EQ(r.name, "run0");
  EXPECT_EQ(r.dtypes, std::vector<cb_dtype>{CB_DTYPE_F32});
  EXPECT_EQ(r.redops, std::vector<cb_redop>{CB_REDOP_SUM});
  EXPECT_EQ(r.memory, CB_MEM_HOST);
  EXPECT_EQ(r.warmup, 5);
  EXPECT_EQ(r.iterations, 20);
  EXPECT_EQ(r.min_time_s, 0);
  EXPECT_EQ(r.max_iterations, 100000);
  EXPECT_EQ(r.placements, std::vector<Placement>{Placement::OutOfPlace});
  EXPECT_TRUE(r.check);
  EXPECT_EQ(r.world_sizes, std::vector<int>{2});
  EXPECT_DOUBLE_EQ(r.timeout_s, 600);
  EXPECT_EQ(r.root, 0);
  EXPECT_EQ(r.window, 64);
  EXPECT_EQ(r.peers, (std::vector<int>{0, 1}));
  EXPECT_TRUE(r.env.empty());
  EXPECT_TRUE(r.options.empty());
}

TEST(ExperimentParse, RunsOverrideDefaultsKeyByKey) {
  const Experiment exp = parse_good("defaults_merge.toml");
  ASSERT_EQ(exp.runs.size(), 3u);
  const RunSpec& inherits = exp.runs[0];
  EXPECT_EQ(inherits.ops, (std::vector<OpKind>{OpKind::Allreduce, OpKind::Allgather}));
  EXPECT_EQ(inherits.iterations, 3);
  EXPECT_EQ(inherits.warmup, 1);
  EXPECT_EQ(inherits.env.at("A"), "from-defaults");
  // Defaults' options for a backend the run does not use are dropped, not an error.
  EXPECT_EQ(inherits.options.count("ucx"), 0u);
  EXPECT_EQ(inherits.options.at("gloo").at("algorithm"), "ring");
  // Positions of inherited values point into [defaults].
  EXPECT_EQ(inherits.pos_of("ops[1]").line, 6);

  const RunSpec& overrides = exp.runs[1];
  EXPECT_EQ(overrides.ops, std::vector<OpKind>{OpKind::Reducescatter});
  EXPECT_EQ(overrides.iterations, 9);
  EXPECT_EQ(overrides.warmup, 1);
  EXPECT_EQ(overrides.env, (std::map<std::string, std::string>{
                               {"A", "from-defaults"}, {"B", "from-run"}, {"C", "from-run"}}));
  EXPECT_EQ(overrides.options.at("gloo"), (std::map<std::string, std::string>{
                                              {"algorithm", "halving_doubling"},
                                              {"timeout_ms", "1000"}}));
  EXPECT_EQ(overrides.pos_of("ops[0]").line, 24);

  const RunSpec& both = exp.runs[2];
  EXPECT_EQ(both.name, "run2");
  EXPECT_EQ(both.index, 2);
  EXPECT_EQ(both.options.at("ucx").at("tls"), "tcp");
}

TEST(ExperimentParse, SizeShapes) {
  const Experiment exp = parse_good("size_shapes.toml");
  ASSERT_EQ(exp.runs.size(), 4u);
  EXPECT_EQ(size_values(exp.runs[0]), (std::vector<uint64_t>{1 << 10, 1 << 12, 1 << 14, 1 << 16, 1 << 18, 1 << 20}));
  EXPECT_EQ(exp.runs[0].sizes[1].text, "4KiB");

  const RunSpec& elements = exp.runs[1];
  EXPECT_EQ(size_values(elements), (std::vector<uint64_t>{1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20}));
  for (const auto& s : elements.sizes) EXPECT_TRUE(s.elements);
  EXPECT_EQ(elements.sizes[0].bytes(sdk::dtype_size(CB_DTYPE_BF16)), 2u << 20);

  const RunSpec& list = exp.runs[2];
  EXPECT_EQ(size_values(list), (std::vector<uint64_t>{1, 3, 1536, 3000000, 4096, 1024}));
  EXPECT_EQ(list.sizes[3].text, "3 MB");
  EXPECT_FALSE(list.sizes[3].elements);
  EXPECT_TRUE(list.sizes[4].elements);
  EXPECT_TRUE(list.sizes[5].elements);
}

TEST(ExperimentParse, BarrierOnlyRunsNeedNoSizes) {
  const RunSpec r = parse_good("size_shapes.toml").runs[3];
  EXPECT_EQ(r.ops, std::vector<OpKind>{OpKind::Barrier});
  EXPECT_TRUE(r.sizes.empty());
  EXPECT_EQ(r.world_sizes, (std::vector<int>{1, 3}));
}

TEST(ExperimentParse, DurationsAcceptNumbersAndUnits) {
  const Experiment exp = parse_ok(R"(
name = "durations"
[defaults]
backend = "gloo"
op = "allreduce"
sizes = ["4KiB"]
[[run]]
min_time = 2
timeout = 1.5
[[run]]
min_time = "500 us"
timeout = "1h"
)");
  EXPECT_DOUBLE_EQ(exp.runs[0].min_time_s, 2);
  EXPECT_DOUBLE_EQ(exp.runs[0].timeout_s, 1.5);
  EXPECT_DOUBLE_EQ(exp.runs[1].min_time_s, 500e-6);
  EXPECT_DOUBLE_EQ(exp.runs[1].timeout_s, 3600);
}

TEST(ExperimentParse, WarningsDoNotStopTheExperiment) {
  std::vector<Diagnostic> diags;
  const Experiment exp = parse_ok(R"(
name = "warn"
[[run]]
backend = "gloo"
op = "allgather"
sizes = ["4KiB"]
redops = ["max"]
)", &diags);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags[0].severity, Diagnostic::Severity::Warning);
  EXPECT_EQ(diags[0].format(),
            "inline.toml:7:10: warning: 'redops' has no effect: none of this run's ops is a reduction");
  EXPECT_EQ(exp.runs.size(), 1u);
}

TEST(ExperimentParse, DiagnosticsFromOneRunDoNotHideOthers) {
  const ParseResult r = parse_experiment_string(R"(
name = "many"
[[run]]
backend = "gloo"
op = "allreduce"
sizes = ["4Kb"]
[[run]]
backend = "gloo"
op = "allreduce"
sizes = ["4KiB"]
warmup = "x"
)", "many.toml");
  EXPECT_FALSE(r.experiment);
  ASSERT_EQ(r.diagnostics.size(), 2u);
  EXPECT_EQ(r.diagnostics[0].pos.line, 6);
  EXPECT_EQ(r.diagnostics[1].pos.line, 11);
}

// A 200 KiB env value validated, then every worker failed to start ("Argument list too long",
// blamed on the plugin's probe). Refused at the value; torch's GLOO_SOCKET_IFNAME is a warning.
TEST(ExperimentParse, EnvValuesTheKernelCannotPassAreRefusedAtTheValue) {
  const std::string big(200 * 1024, 'y');
  const ParseResult r = parse_experiment_string(
      "name = \"e\"\n[[run]]\nbackend = \"gloo\"\nops = [\"allreduce\"]\nsizes = [\"4KiB\"]\n"
      "env = { A = \"" + big + "\", GLOO_SOCKET_IFNAME = \"eth0\" }\n", "env.toml");
  EXPECT_FALSE(r.experiment);
  bool too_big = false, ifname = false;
  for (const auto& d : r.diagnostics) {
    if (d.message.find("'env.A' is 204803 bytes: Linux passes at most 131072 bytes") != std::string::npos) {
      too_big = d.severity == Diagnostic::Severity::Error && d.pos.line == 6 && d.pos.column == 13;
    }
    if (d.message.find("GLOO_SOCKET_IFNAME is read by PyTorch") != std::string::npos)
      ifname = d.severity == Diagnostic::Severity::Warning;
  }
  EXPECT_TRUE(too_big) << (r.diagnostics.empty() ? "" : r.diagnostics[0].format());
  EXPECT_TRUE(ifname);
  // 100 KiB each is fine one by one; eleven of them exceed the table's 1 MiB.
  std::string many = "name = \"e\"\n[[run]]\nbackend = \"gloo\"\nops = [\"allreduce\"]\nsizes = [\"4KiB\"]\nenv = { ";
  for (int i = 0; i < 11; ++i) many += fmt::format("{}V{} = \"{}\"", i ? ", " : "", i, std::string(100 * 1024, 'x'));
  many += " }\n";
  const ParseResult m = parse_experiment_string(many, "many.toml");
  EXPECT_FALSE(m.experiment);
  ASSERT_FALSE(m.diagnostics.empty());
  EXPECT_NE(m.diagnostics[0].message.find("'env' holds"), std::string::npos) << m.diagnostics[0].format();
  EXPECT_NE(m.diagnostics[0].message.find("over 1024 KiB of environment"), std::string::npos) << m.diagnostics[0].format();
  // Six in [defaults] and six in the run: each table under the cap, the run's environment over it.
  std::string split = "name = \"e\"\n[defaults]\nenv = { ";
  for (int i = 0; i < 6; ++i) split += fmt::format("{}D{} = \"{}\"", i ? ", " : "", i, std::string(100 * 1024, 'x'));
  split += " }\n[[run]]\nbackend = \"gloo\"\nops = [\"allreduce\"]\nsizes = [\"4KiB\"]\nenv = { ";
  for (int i = 0; i < 6; ++i) split += fmt::format("{}R{} = \"{}\"", i ? ", " : "", i, std::string(100 * 1024, 'x'));
  split += " }\n";
  const ParseResult both = parse_experiment_string(split, "split.toml");
  EXPECT_FALSE(both.experiment);
  ASSERT_EQ(both.diagnostics.size(), 1u);
  EXPECT_NE(both.diagnostics[0].message.find("run 'run0' passes 1228848 bytes of 'env' with [defaults]' 'env'"),
            std::string::npos) << both.diagnostics[0].format();
  EXPECT_EQ(both.diagnostics[0].pos.line, 8);
}

// A workload run took op-sweep settings without a word (only the first dtype is used, placement
// and iterations did nothing); workload = "memory" took batch_size beside batch_sizes.
TEST(ExperimentParse, OpSettingsAWorkloadDoesNotUseAreWarnings) {
  std::vector<Diagnostic> warnings;
  parse_ok(R"(name = "w"
[[run]]
name = "dp"
backend = "gloo"
workload = "data_parallel"
model = { parameters = 4096, layers = 2 }
dtypes = ["f32", "bf16"]
placement = "in_place"
iterations = 5
method = "per_iteration"
oversubscribe_gpu = true
[[run]]
name = "mem"
backend = "gloo"
workload = "memory"
model = { parameters = 4096, layers = 2 }
batch_size = 4
batch_sizes = [1, 2]
)", &warnings);
  std::vector<std::string> text;
  for (const auto& d : warnings) text.push_back(d.format());
  const auto has = [&](const std::string& what) {
    return std::any_of(text.begin(), text.end(), [&](const std::string& t) { return t.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(has("inline.toml:7:10: warning: only the first of 'dtypes' (f32) is used")) << fmt::format("{}", fmt::join(text, "\n"));
  // A probe: placement's warning said "set 'steps' and 'warmup'"; method and oversubscribe_gpu had none.
  EXPECT_TRUE(has("inline.toml:8:13: warning: 'placement' has no effect: a data_parallel step's collectives are its "
                  "model's"));
  EXPECT_TRUE(has("inline.toml:9:14: warning: 'iterations' has no effect"));
  EXPECT_TRUE(has("inline.toml:10:10: warning: 'method' has no effect: a data_parallel run times whole steps (its "
                  "records say method \"per_step\")"));
  EXPECT_TRUE(has("inline.toml:11:21: warning: 'oversubscribe_gpu' has no effect: only memory = \"cuda\" puts ranks "
                  "on GPUs"));
  EXPECT_TRUE(has("inline.toml:17:14: warning: 'batch_size' has no effect: workload = \"memory\" measures each of 'batch_sizes'"));
}

TEST(ExperimentParse, MissingFileIsOneDiagnosticWithoutLine) {
  const ParseResult r = parse_experiment_file("/nonexistent/experiment.toml");
  EXPECT_FALSE(r.experiment);
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].pos.line, 0);
  EXPECT_EQ(r.diagnostics[0].format(),
            "/nonexistent/experiment.toml: error: cannot read the experiment file: No such file or "
            "directory");
}

TEST(ExperimentParse, DirectoryInsteadOfFile) {
  const ParseResult r = parse_experiment_file(kGoodDir.string());
  ASSERT_EQ(r.diagnostics.size(), 1u);
  EXPECT_EQ(r.diagnostics[0].message, "cannot read the experiment file: it is a directory, not a file; give the path of a .toml "
            "experiment file");
}

TEST(ExperimentParse, AsParsedIsTheResolvedExperiment) {
  const Experiment exp = parse_good("size_shapes.toml");
  const nlohmann::json& j = exp.as_parsed;
  EXPECT_EQ(j.at("name"), "size-shapes");
  EXPECT_EQ(j.at("seed"), 42);
  ASSERT_EQ(j.at("runs").size(), 4u);
  const auto& list = j.at("runs").at(2);
  EXPECT_EQ(list.at("ops"), nlohmann::json::array({"allgather"}));  // inherited from [defaults]
  EXPECT_EQ(list.at("dtypes"), nlohmann::json::array({"uint8"}));
  EXPECT_EQ(list.at("sizes").at(2), (nlohmann::json{{"text", "1.5KiB"}, {"bytes", 1536}}));
  EXPECT_EQ(list.at("sizes").at(4), (nlohmann::json{{"text", "4096 elements"}, {"elements", 4096}}));
  EXPECT_TRUE(list.at("timeout_s").is_null()) << "unset: sized per execution, no one number";
  EXPECT_EQ(list.at("placements"), nlohmann::json::array({"out_of_place"}));
  EXPECT_EQ(list.at("memory"), "host");
}

TEST(ExperimentParse, PlacementNames) {
  EXPECT_STREQ(placement_name(Placement::OutOfPlace), "out_of_place");
  EXPECT_STREQ(placement_name(Placement::InPlace), "in_place");
}

}  // namespace
}  // namespace commbench

namespace commbench {
namespace {

TEST(ExperimentParse, GpuKeysDeviceAndGpuTiming) {
  const Experiment exp = parse_ok(R"(
name = "gpu"
[defaults]
backend = "nccl"
memory = "cuda"
op = "allreduce"
sizes = [4096]
[[run]]
[[run]]
device = 3
gpu_timing = "host_stream_sync"
[[run]]
method = "graph"
)");
  ASSERT_EQ(exp.runs.size(), 3u);
  EXPECT_FALSE(exp.runs[0].device.has_value());
  EXPECT_EQ(exp.runs[0].gpu_timing, TimingMethod::CudaEvent);
  EXPECT_EQ(exp.runs[0].method, MeasureMethod::Batch);  // the reference tools' method
  EXPECT_EQ(exp.runs[1].device, 3);
  EXPECT_EQ(exp.runs[1].gpu_timing, TimingMethod::HostStreamSync);
  EXPECT_EQ(exp.runs[2].method, MeasureMethod::Graph);
  EXPECT_EQ(exp.runs[2].gpu_timing, TimingMethod::CudaEvent);
}

// A probe: iterations = 200000 was refused for the default max_iterations (100000), a cap that
// only min_time and target_cv use and the user never set. The default rises to the iterations.
TEST(ExperimentParse, MoreFixedIterationsThanTheDefaultCapAreAccepted) {
  const Experiment exp = parse_ok(R"(
name = "long"
[[run]]
backend = "gloo"
ops = ["allreduce"]
sizes = [4096]
iterations = 200000
)");
  EXPECT_EQ(exp.runs[0].iterations, 200000);
  EXPECT_EQ(exp.runs[0].max_iterations, 200000);
}

TEST(ExperimentParse, TimingMethodAggregationAndCvTarget) {
  const Experiment exp = parse_ok(R"(
name = "methods"
[defaults]
backend = "gloo"
op = "allreduce"
sizes = [4096]
[[run]]
[[run]]
method = "per_iteration"
[[run]]
rank_aggregation = "max"
target_cv = 0.05
max_time = "2s"
)");
  ASSERT_EQ(exp.runs.size(), 3u);
  EXPECT_EQ(exp.runs[0].method, MeasureMethod::Batch);
  EXPECT_EQ(exp.runs[0].rank_aggregation, RankAggregation::Avg);
  EXPECT_EQ(exp.runs[0].target_cv, 0.0);
  EXPECT_EQ(exp.runs[1].method, MeasureMethod::PerIteration);
  EXPECT_EQ(exp.runs[2].rank_aggregation, RankAggregation::Max);
  EXPECT_DOUBLE_EQ(exp.runs[2].target_cv, 0.05);
  EXPECT_DOUBLE_EQ(exp.runs[2].max_time_s, 2.0);
}

TEST(ExperimentParse, RetiredCudaEventBatchSaysWhatToWriteInstead) {
  ParseResult bad = parse_experiment_string(R"(name = "t"
[[run]]
backend = "nccl"
memory = "cuda"
op = "allreduce"
sizes = [4096]
gpu_timing = "cuda_event_batch"
)", "t.toml");
  EXPECT_FALSE(bad.experiment.has_value());
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(bad.diagnostics[0].format(),
            "t.toml:7:14: error: gpu_timing = \"cuda_event_batch\" is now two settings: write "
            "method = \"batch\" (the method; it is the default) and gpu_timing = \"cuda_event\" "
            "(the clock)");
}

TEST(ExperimentParse, BadMethodAggregationAndCvTargetAreErrors) {
  ParseResult bad = parse_experiment_string(R"(name = "t"
[[run]]
backend = "gloo"
op = "allreduce"
sizes = [4096]
method = "batched"
rank_aggregation = "median"
target_cv = 5
)", "t.toml");
  EXPECT_FALSE(bad.experiment.has_value());
  ASSERT_EQ(bad.diagnostics.size(), 3u);
  EXPECT_EQ(bad.diagnostics[0].format(), "t.toml:6:10: error: unknown timing method 'batched'; did you mean 'batch'?");
  EXPECT_EQ(bad.diagnostics[1].format(),
            "t.toml:7:20: error: unknown rank aggregation 'median'; expected one of: avg, min, max, rank0");
  EXPECT_EQ(bad.diagnostics[2].format(),
            "t.toml:8:13: error: 'target_cv' must be a fraction in [0, 1) (0.05 for 5 %; 0 = off), got 5");
}

TEST(ExperimentParse, GpuTimingNamesTheValidMethodsAndGpuKeysOnHostMemoryWarn) {
  ParseResult bad = parse_experiment_string(R"(name = "t"
[[run]]
backend = "nccl"
memory = "cuda"
op = "allreduce"
sizes = [4096]
gpu_timing = "graph"
)", "t.toml");
  EXPECT_FALSE(bad.experiment.has_value());
  ASSERT_FALSE(bad.diagnostics.empty());
  EXPECT_EQ(bad.diagnostics[0].format(),
            "t.toml:7:14: error: unknown GPU clock 'graph'; expected one of: cuda_event, "
            "host_stream_sync");
  std::vector<Diagnostic> warnings;
  parse_ok(R"(name = "w"
[[run]]
backend = "gloo"
op = "allreduce"
sizes = [4096]
device = 1
)", &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].format().find("'device' has no effect"), std::string::npos) << warnings[0].format();
}

}  // namespace
}  // namespace commbench

namespace commbench {
namespace {

// A probe: rank_aggregation = "max" on a run of OSU-style patterns was accepted silently,
// though those report one rank's clock.
TEST(ExperimentParse, RankAggregationOnOneClockPatternsSaysItHasNoEffect) {
  std::vector<Diagnostic> warnings;
  parse_ok("name = \"t\"\n[[run]]\nbackend = \"gloo\"\nops = [\"pingpong\", \"msg_rate\"]\nsizes = [4096]\n"
           "world_size = 2\nrank_aggregation = \"max\"\n",
           &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].message.find("'rank_aggregation' has no effect"), std::string::npos) << warnings[0].message;
  warnings.clear();
  parse_ok("name = \"t\"\n[[run]]\nbackend = \"gloo\"\nops = [\"pingpong\", \"sendrecv\"]\nsizes = [4096]\n"
           "world_size = 2\nrank_aggregation = \"max\"\n",
           &warnings);
  EXPECT_TRUE(warnings.empty()) << "sendrecv aggregates its ranks";
}

// A probe: `root = 2` at world size 2 was an error for an allreduce-only run, beside the warning
// that root has no effect there (and `--set run.world_size=2` on such a file failed). It is an
// error only where an op takes a root; the same for `peers`.
TEST(ExperimentParse, RootAndPeersBeyondTheWorldMatterOnlyWhereAnOpUsesThem) {
  std::vector<Diagnostic> warnings;
  parse_ok("name = \"t\"\n[[run]]\nbackend = \"gloo\"\nop = \"allreduce\"\nsizes = [4096]\nworld_size = 2\n"
           "root = 2\npeers = [0, 3]\n",
           &warnings);
  ASSERT_EQ(warnings.size(), 2u);
  for (const Diagnostic& d : warnings) EXPECT_NE(d.message.find("has no effect"), std::string::npos) << d.message;
  for (const char* op : {"broadcast", "pingpong"}) {
    const ParseResult bad = parse_experiment_string(
        fmt::format("name = \"t\"\n[[run]]\nbackend = \"gloo\"\nop = \"{}\"\nsizes = [4096]\nworld_size = 2\n"
                    "root = 2\npeers = [0, 3]\n",
                    op),
        "t.toml");
    EXPECT_FALSE(bad.experiment.has_value()) << op;
    bool named = false;
    for (const Diagnostic& d : bad.diagnostics)
      named |= d.message.find("is not a rank of world size 2") != std::string::npos;
    EXPECT_TRUE(named) << op;
  }
}

}  // namespace
}  // namespace commbench
