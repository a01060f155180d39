// Backend option descriptors (ABI 1.2): the SDK builds them from a plugin's one option table and
// parses by the same table; the core reads them from a plugin's function table (only when its
// struct_size covers them), finds malformed ones, and checks an experiment's options by them.
#include <gtest/gtest.h>

#include <climits>

#include "commbench/sdk/option_table.hpp"
#include "experiment/capability_check.h"
#include "plugin/option_descriptors.h"

namespace commbench {
namespace {

struct DemoOptions {
  int64_t timeout_ms = 100;
  std::string mode = "fast";
  bool verbose = false;
};

constexpr const char* kModes[] = {"fast", "safe", nullptr};
constexpr sdk::OptionDef<DemoOptions> kTable[] = {
    {"mode", CB_OPTION_CHOICE, "fast", "how to run", [](DemoOptions& p, const sdk::OptionValue& v) { p.mode = v.text; }, kModes},
    {"verbose", CB_OPTION_BOOL, "off", "say more", [](DemoOptions& p, const sdk::OptionValue& v) { p.verbose = v.boolean; }},
    {.name = "timeout_ms", .type = CB_OPTION_INT, .default_value = "100", .doc = "every wait",
     .apply = [](DemoOptions& p, const sdk::OptionValue& v) { p.timeout_ms = v.integer; }, .min = 1, .max = INT32_MAX},
};
constexpr auto kDescriptors = sdk::describe_options(kTable);

cb_backend_api table_with(const cb_option_descriptor* d, size_t n) {
  cb_backend_api api{};
  api.struct_size = CB_STRUCT_SIZE(cb_backend_api, num_option_descriptors);
  api.option_descriptors = d;
  api.num_option_descriptors = n;
  return api;
}

TEST(OptionTable, ParsesByTheTableAndRefusesUnknownKeysAndBadValues) {
  const cb_option good[] = {{sizeof(cb_option), "timeout_ms", "250"}, {sizeof(cb_option), "verbose", "yes"},
                            {sizeof(cb_option), "mode", "safe"}};
  DemoOptions p;
  sdk::apply_options<DemoOptions>(kTable, "demo", good, 3, p);
  EXPECT_EQ(p.timeout_ms, 250);
  EXPECT_TRUE(p.verbose);
  EXPECT_EQ(p.mode, "safe");

  auto message_of = [](const cb_option& o) -> std::string {
    DemoOptions q;
    try {
      sdk::apply_options<DemoOptions>(kTable, "demo", &o, 1, q);
    } catch (const sdk::PluginError& e) {
      EXPECT_EQ(e.code(), CB_ERR_INVALID_ARGUMENT);
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(message_of({sizeof(cb_option), "timout_ms", "1"}),
            "unknown option 'timout_ms' for backend demo; valid options are: mode, verbose, timeout_ms");
  EXPECT_EQ(message_of({sizeof(cb_option), "timeout_ms", "0"}),
            "option timeout_ms = \"0\" is not valid; expected a whole number from 1 to 2147483647");
  EXPECT_EQ(message_of({sizeof(cb_option), "mode", "slow"}), "option mode = \"slow\" is not valid; expected one of fast, safe");
}

TEST(OptionDescriptors, AreReadFromATableThatCoversThem) {
  const cb_backend_api api = table_with(kDescriptors.data(), kDescriptors.size());
  const OptionDescriptors read = read_option_descriptors(api);
  ASSERT_TRUE(read.options.has_value());
  EXPECT_TRUE(read.problems.empty());
  ASSERT_EQ(read.options->size(), 3u);
  const PluginOption& mode = (*read.options)[0];
  EXPECT_EQ(mode.name, "mode");
  EXPECT_EQ(mode.type, CB_OPTION_CHOICE);
  EXPECT_EQ(mode.choices, (std::vector<std::string>{"fast", "safe"}));
  EXPECT_EQ(mode.check_value("safe"), "");
  EXPECT_EQ(mode.check_value("slow"), "one of fast, safe");
  const PluginOption& timeout = (*read.options)[2];
  EXPECT_EQ(timeout.default_value, "100");
  EXPECT_EQ(timeout.check_value("soon"), "a whole number from 1 to 2147483647");
  // The JSON the probe sends keeps everything validate and `plugins NAME` use.
  const PluginOption back = plugin_option_from_json(to_json(timeout));
  EXPECT_EQ(back.name, "timeout_ms");
  EXPECT_EQ(back.type, CB_OPTION_INT);
  EXPECT_EQ(back.max, INT32_MAX);
  EXPECT_EQ(back.doc, "every wait");
}

TEST(OptionDescriptors, AnOlderTableDescribesNothingEvenWithBytesPastItsStructSize) {
  cb_backend_api api = table_with(kDescriptors.data(), kDescriptors.size());
  api.struct_size = CB_STRUCT_SIZE(cb_backend_api, complete);  // a 1.1 plugin
  EXPECT_FALSE(read_option_descriptors(api).options.has_value());
  api = table_with(nullptr, 0);  // 1.2, but no table: "not described"
  EXPECT_FALSE(read_option_descriptors(api).options.has_value());
}

TEST(OptionDescriptors, MalformedOnesAreNamed) {
  static constexpr const char* kNone[] = {nullptr};
  cb_option_descriptor bad[4] = {kDescriptors[0], kDescriptors[0], kDescriptors[2], kDescriptors[1]};
  bad[2].default_value = "never";  // not an int
  bad[3].type = CB_OPTION_CHOICE;  // a choice ...
  bad[3].choices = kNone;          // ... of nothing
  const OptionDescriptors read = read_option_descriptors(table_with(bad, 4));
  ASSERT_EQ(read.problems.size(), 3u);
  EXPECT_EQ(read.problems[0], "option descriptor #1 (mode): name is used by an earlier descriptor too");
  EXPECT_EQ(read.problems[1],
            "option descriptor #2 (timeout_ms): default \"never\" is not a valid value: expected a whole number from 1 "
            "to 2147483647");
  EXPECT_EQ(read.problems[2], "option descriptor #3 (verbose): a choice without choices");
  cb_option_descriptor short_one = kDescriptors[0];
  short_one.struct_size = CB_STRUCT_SIZE(cb_option_descriptor, doc);
  EXPECT_EQ(read_option_descriptors(table_with(&short_one, 1)).problems.size(), 1u);
  // A garbage size is refused before the core steps through the array by it.
  cb_option_descriptor huge = kDescriptors[0];
  huge.struct_size = SIZE_MAX - 3;
  const OptionDescriptors garbage = read_option_descriptors(table_with(&huge, 1));
  ASSERT_EQ(garbage.problems.size(), 1u);
  EXPECT_NE(garbage.problems[0].find("not a plausible size"), std::string::npos) << garbage.problems[0];
}

TEST(OptionDescriptors, ATypeFromALaterMinorIsTakenAsTextAndAnUnknownOneOtherwiseIsAProblem) {
  cb_option_descriptor later = kDescriptors[1];
  later.type = static_cast<cb_option_type>(CB_OPTION_TYPE_COUNT_V1_2 + 3);
  later.default_value = "";
  cb_backend_api api = table_with(&later, 1);
  EXPECT_EQ(read_option_descriptors(api).problems.size(), 1u);  // same minor: garbage
  api.abi_minor = CB_ABI_MINOR + 1;
  const OptionDescriptors read = read_option_descriptors(api);
  EXPECT_TRUE(read.problems.empty());
  ASSERT_TRUE(read.options.has_value());
  ASSERT_EQ(read.options->size(), 1u);
  EXPECT_EQ((*read.options)[0].type, CB_OPTION_STRING);
  EXPECT_EQ((*read.options)[0].check_value("anything"), "");
}

// check_against_plugins with the options of a described and an undescribed plugin.
PluginInfo plugin(const std::string& name, bool described) {
  PluginInfo p;
  p.name = name;
  p.path = "/plugins/libcommbench_backend_" + name + ".so";
  p.abi_major = 1;
  p.abi_minor = described ? 2 : 1;
  p.caps.struct_size = sizeof(cb_capabilities);
  p.caps.ops = CB_BIT(CB_OP_ALLREDUCE);
  p.caps.dtypes = p.caps.reduce_dtypes = CB_BIT(CB_DTYPE_F32);
  p.caps.redops = CB_BIT(CB_REDOP_SUM);
  p.caps.mem_types = CB_BIT(CB_MEM_HOST);
  p.caps.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE;
  if (described) p.options = read_option_descriptors(table_with(kDescriptors.data(), kDescriptors.size())).options;
  return p;
}

std::vector<std::string> option_check_messages(const std::string& text) {
  ParseResult r = parse_experiment_string(text, "opts.toml");
  for (const auto& d : r.diagnostics) ADD_FAILURE() << d.format();
  if (!r.experiment) return {"did not parse"};
  const PluginCatalog catalog{{"demo", plugin("demo", true)}, {"old", plugin("old", false)}};
  std::vector<std::string> out;
  for (const auto& d : check_against_plugins(*r.experiment, catalog)) out.push_back(d.format());
  return out;
}

TEST(OptionCheck, UnknownKeysAndBadValuesAreErrorsAtTheKey) {
  EXPECT_EQ(option_check_messages(R"(name = "x"
[[run]]
backend = "demo"
op = "allreduce"
dtype = "f32"
sizes = ["4KiB"]
[run.options.demo]
timout_ms = 5
mode = "slow"
verbose = "on"
)"),
            (std::vector<std::string>{
                "opts.toml:9:8: error: option mode = \"slow\" for backend 'demo' is not valid: expected one of fast, safe",
                "opts.toml:8:1: error: unknown option 'timout_ms' for backend 'demo'; did you mean 'timeout_ms'? Its "
                "options are: mode, verbose, timeout_ms ('commbench plugins demo' describes them)",
            }));
}

TEST(OptionCheck, AnUndescribedPluginGetsOneNoteAndNoErrors) {
  const auto out = option_check_messages(R"(name = "x"
[[run]]
backend = "old"
op = "allreduce"
dtype = "f32"
sizes = ["4KiB"]
[run.options.old]
anything = 1
whatever = "x"
)");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], "opts.toml:7:1: note: plugin 'old' does not describe its options (its table has no ABI 1.2 "
                    "option descriptors), so they are not checked here; its workers check them when they start");
}

// A plugin that chooses its GPU by its own option `device` (as nccl and ncclx do) never sees the
// run's `device`: the buffers and the backend were on different GPUs, and the run failed with an
// error about streams. Validation says so first.
struct GpuOptions {
  int64_t device = -1;
};
constexpr sdk::OptionDef<GpuOptions> kGpuTable[] = {
    {.name = "device", .type = CB_OPTION_INT, .default_value = "-1", .doc = "the GPU",
     .apply = [](GpuOptions& p, const sdk::OptionValue& v) { p.device = v.integer; }, .min = -1, .max = 1024},
};
constexpr auto kGpuDescriptors = sdk::describe_options(kGpuTable);

std::vector<std::string> device_check_messages(const std::string& options) {
  ParseResult r = parse_experiment_string(R"(name = "x"
[[run]]
backend = "gpu"
memory = "cuda"
op = "allreduce"
dtype = "f32"
sizes = ["4KiB"]
device = 3
)" + options, "dev.toml");
  if (!r.experiment) return {"did not parse"};
  PluginInfo p = plugin("gpu", true);
  p.caps.mem_types |= CB_BIT(CB_MEM_CUDA);
  p.options = read_option_descriptors(table_with(kGpuDescriptors.data(), kGpuDescriptors.size())).options;
  std::vector<std::string> out;
  for (const auto& d : check_against_plugins(*r.experiment, PluginCatalog{{"gpu", p}}))
    if (d.severity == Diagnostic::Severity::Error) out.push_back(d.format());
  return out;
}

TEST(OptionCheck, TheRunsDeviceMustReachAPluginThatChoosesItsGpuItself) {
  auto out = device_check_messages("");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("dev.toml:8:10: error: device = 3 does not reach backend 'gpu'"), std::string::npos) << out[0];
  EXPECT_NE(out[0].find("add options.gpu.device = 3"), std::string::npos) << out[0];
  out = device_check_messages("[run.options.gpu]\ndevice = 2\n");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("device = 3 but options.gpu.device = 2"), std::string::npos) << out[0];
  EXPECT_TRUE(device_check_messages("[run.options.gpu]\ndevice = 3\n").empty());
}

}  // namespace
}  // namespace commbench
