// The tables that define each concept once (issue 16 §5): run settings, ops, output formats.
// What follows from a row must really follow: parsing, defaults, layering, JSON both ways, docs.
#include <fstream>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "common/ops.h"
#include "experiment/experiment.h"
#include "experiment/run_setting_table.h"
#include "plan/plan.h"
#include "report/output_formats.h"
#include "stats/bandwidth.h"

namespace commbench {
namespace definition_tables_test {  // named: unity builds put several test files in one unit

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ParseResult parse(const std::string& body) {
  return parse_experiment_string("name = \"t\"\n" + body, "t.toml");
}

const char* kRun = "[[run]]\nbackend = \"gloo\"\nop = \"allreduce\"\nsizes = [\"4KiB\"]\n";

TEST(RunSettingsTable, DocsRunKeyTableIsTheGeneratedOne) {
  const std::string docs = read_file(std::string(COMMBENCH_SOURCE_DIR) + "/docs/configuration.md");
  ASSERT_FALSE(docs.empty());
  EXPECT_NE(docs.find(run_keys_markdown()), std::string::npos)
      << "docs/configuration.md's \"Run keys\" table differs from the settings table: paste the output "
         "of `commbench settings` over it";
}

TEST(RunSettingsTable, KeysAndJsonNamesAreUnique) {
  std::set<std::string_view> keys, json_keys;
  for (const RunKeyDoc& k : structural_run_keys()) EXPECT_TRUE(keys.insert(k.key).second) << k.key;
  for (const RunSetting& s : run_settings()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key;
    EXPECT_TRUE(json_keys.insert(s.json_key).second) << s.json_key;
    EXPECT_FALSE(s.meaning.empty()) << s.key;
    EXPECT_FALSE(default_text(s).empty()) << s.key;
  }
}

// Every setting left out takes the default of RunSettings; the JSON of the parsed run and of the
// execution carry every setting under its JSON name.
TEST(RunSettingsTable, DefaultsReachAsParsedAndTheExecution) {
  ParseResult r = parse(kRun);
  ASSERT_TRUE(r.experiment) << (r.diagnostics.empty() ? "" : r.diagnostics[0].message);
  const RunSettings builtin;
  nlohmann::json want;
  settings_to_json(builtin, want);
  const nlohmann::json& run = r.experiment->as_parsed.at("runs").at(0);
  for (const RunSetting& s : run_settings()) {
    ASSERT_TRUE(run.contains(s.json_key)) << s.json_key;
    if (s.key == "timeout") {  // sized per execution when unset: no one number to record
      EXPECT_TRUE(run.at(s.json_key).is_null()) << run.at(s.json_key);
      continue;
    }
    EXPECT_EQ(run.at(s.json_key), want.at(s.json_key)) << s.key;
  }
  const std::vector<Execution> plan = plan_job(*r.experiment);
  ASSERT_EQ(plan.size(), 1u);
  nlohmann::json exec;
  to_json(exec, plan[0]);
  for (const RunSetting& s : run_settings()) {
    if (s.key == "timeout") continue;  // sized per execution when unset
    EXPECT_EQ(exec.at(s.json_key), want.at(s.json_key)) << s.key;
  }
}

// A value written in [defaults] reaches the run unless the run writes its own; both reach the
// worker's execution JSON and come back equal.
TEST(RunSettingsTable, LayeringAndExecutionRoundTrip) {
  ParseResult r = parse(
      "[defaults]\nwarmup = 3\nwindow = 8\ntimeout = \"90s\"\n"
      "[[run]]\nbackend = \"gloo\"\nops = [\"allreduce\", \"unidir_bw\"]\nsizes = [\"4KiB\"]\n"
      "window = 16\npeers = [1, 0]\ncheck = false\nmin_time = \"2ms\"\nmemory = \"host_pinned\"\n");
  ASSERT_TRUE(r.experiment) << (r.diagnostics.empty() ? "" : r.diagnostics[0].message);
  const RunSpec& run = r.experiment->runs.at(0);
  EXPECT_EQ(run.warmup, 3);
  EXPECT_EQ(run.window, 16);
  EXPECT_EQ(run.timeout_s, 90);
  EXPECT_TRUE(run.timeout_given);
  EXPECT_EQ(run.peers, (std::vector<int>{1, 0}));
  EXPECT_FALSE(run.check);
  EXPECT_DOUBLE_EQ(run.min_time_s, 0.002);
  EXPECT_EQ(run.memory, CB_MEM_HOST_PINNED);

  const std::vector<Execution> plan = plan_job(*r.experiment);
  ASSERT_EQ(plan.size(), 1u);
  nlohmann::json j;
  to_json(j, plan[0]);
  Execution back;
  from_json(j, back);
  nlohmann::json again;
  to_json(again, back);
  EXPECT_EQ(j, again);
  EXPECT_EQ(back.window, 16);
  EXPECT_EQ(back.peers, (std::vector<int>{1, 0}));
  EXPECT_EQ(back.timeout_s, 90);
}

// A bad value in [defaults] is reported once at its own position, and a run that writes its own
// value is not affected by it.
TEST(RunSettingsTable, BadValueReportedAtItsPositionWithTheKey) {
  ParseResult r = parse("[defaults]\nwarmup = \"five\"\n[[run]]\nbackend = \"gloo\"\nop = \"barrier\"\n"
                        "[[run]]\nbackend = \"gloo\"\nop = \"barrier\"\nwarmup = 1\n");
  EXPECT_FALSE(r.experiment);
  int errors = 0;
  for (const auto& d : r.diagnostics) {
    if (d.severity != Diagnostic::Severity::Error) continue;
    ++errors;
    EXPECT_EQ(d.pos.line, 3);
    EXPECT_NE(d.message.find("'warmup'"), std::string::npos) << d.message;
  }
  EXPECT_EQ(errors, 1);
}

TEST(OpTable, BufferSizesAndFactorsFollowTheRows) {
  for (const OpInfo& o : all_ops()) {
    EXPECT_EQ(send_elements(o.kind, 10, 4), static_cast<uint64_t>(10 * per_world(o.send, 4))) << o.name;
    EXPECT_EQ(recv_elements(o.kind, 10, 4), static_cast<uint64_t>(10 * per_world(o.recv, 4))) << o.name;
    EXPECT_DOUBLE_EQ(busbw_factor(o.kind, 4), bus_factor(o.busbw, 4)) << o.name;
    EXPECT_EQ(parse_op_kind(o.name), o.kind);
    // Only collectives of the ABI have in-place layouts.
    if (o.point_to_point) EXPECT_FALSE(o.in_place) << o.name;
  }
  // nccl-tests' in-place layouts: alltoall has none (undefined in NCCL), barrier moves nothing.
  EXPECT_FALSE(op_info(OpKind::Alltoall).in_place);
  EXPECT_TRUE(op_info(OpKind::Gather).in_place);
  EXPECT_EQ(recv_elements(OpKind::Allgather, 3, 4), 12u);
  EXPECT_EQ(send_elements(OpKind::Reducescatter, 3, 4), 12u);
}

TEST(OpTable, InPlaceCasesArePlannedOnlyWhereTheRowAllowsThem) {
  ParseResult r = parse("[[run]]\nbackend = \"gloo\"\nops = [\"allreduce\", \"alltoall\"]\n"
                        "sizes = [\"4KiB\"]\nplacement = [\"in_place\", \"out_of_place\"]\n");
  ASSERT_TRUE(r.experiment);
  const auto plan = plan_job(*r.experiment);
  ASSERT_EQ(plan.size(), 1u);
  int allreduce = 0, alltoall = 0;
  for (const CaseSpec& c : plan[0].cases) (c.op == OpKind::Allreduce ? allreduce : alltoall)++;
  EXPECT_EQ(allreduce, 2);
  EXPECT_EQ(alltoall, 1);
}

TEST(OutputFormats, OutputsChooseReportersAndUnknownNamesAreErrors) {
  ParseResult all = parse(kRun);
  ASSERT_TRUE(all.experiment);
  EXPECT_TRUE(all.experiment->outputs.empty());
  for (const OutputFormat& f : output_formats()) EXPECT_TRUE(output_chosen(*all.experiment, f.name)) << f.name;
  EXPECT_EQ(all.experiment->as_parsed.at("outputs"), "all");

  ParseResult some = parse(std::string("outputs = [\"csv\", \"markdown\"]\n") + kRun);
  ASSERT_TRUE(some.experiment);
  EXPECT_EQ(some.experiment->outputs, (std::vector<std::string>{"csv", "markdown"}));
  EXPECT_EQ(some.experiment->as_parsed.at("outputs"), nlohmann::json({"csv", "markdown"}));
  EXPECT_TRUE(check_outputs(*some.experiment).empty());
  EXPECT_TRUE(output_chosen(*some.experiment, "csv"));
  EXPECT_FALSE(output_chosen(*some.experiment, "summary_json"));

  // Names are checked against the registry after parsing (the parser does not link reporters).
  ParseResult bad = parse(std::string("outputs = [\"csv\", \"cvs\"]\n") + kRun);
  ASSERT_TRUE(bad.experiment);
  const auto diags = check_outputs(*bad.experiment);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_NE(diags[0].message.find("did you mean 'csv'"), std::string::npos) << diags[0].message;
  EXPECT_EQ(diags[0].pos.line, 2);
  EXPECT_EQ(diags[0].pos.column, 19);  // the "cvs" element

  // Asked for, and no run would write it (a probe's `outputs = ["trace"]` without `trace = true`).
  ParseResult idle = parse(std::string("outputs = [\"trace\", \"execution_log\"]\n") + kRun);
  ASSERT_TRUE(idle.experiment);
  const auto warned = check_outputs(*idle.experiment);
  ASSERT_EQ(warned.size(), 2u);
  EXPECT_EQ(warned[0].severity, Diagnostic::Severity::Warning);
  EXPECT_NE(warned[0].message.find("no run sets it: there will be no trace.json"), std::string::npos) << warned[0].message;
  EXPECT_NE(warned[1].message.find("no run has that op"), std::string::npos) << warned[1].message;
  ParseResult traced = parse(std::string("outputs = [\"trace\"]\n") + kRun + "trace = true\n");
  ASSERT_TRUE(traced.experiment);
  EXPECT_TRUE(check_outputs(*traced.experiment).empty());

  for (const OutputFormat& f : output_formats()) {
    EXPECT_EQ(find_output_format(f.name), &f);
    EXPECT_NE(f.make, nullptr);
  }
  ASSERT_NE(find_output_format("jsonl"), nullptr);
  EXPECT_TRUE(find_output_format("jsonl")->always);
}

}  // namespace
}  // namespace commbench
