// The trace recorder's file and the agent's merge (issue 13 §1), without processes.
#include <fstream>

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "measure/trace_recorder.h"
#include "report/clock_alignment.h"
#include "report/trace_merge.h"
#include "test_report_helpers.h"

namespace commbench {
namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(TraceRecorder, OffRecordsNothingAndReadsNoClock) {
  TraceRecorder off;
  EXPECT_FALSE(off.on());
  EXPECT_EQ(off.now(), 0);
  off.set_case("x", {});
  off.span(TracePhase::Timed, 1, 2);
  EXPECT_EQ(off.add_case("y", {}), -1);
  off.flush();  // no file, nothing to write: must not throw
}

TEST(TraceRecorder, WritesNamedEventsPerFlushAndAReadableFileWithoutTheClosingBracket) {
  test::TempDir dir;
  const auto path = dir.path() / "trace" / "exec2-rank1.json";
  {
    TraceRecorder t(path, 1, 2);
    t.span(TracePhase::Init, 1000, 3000);
    t.set_case("allreduce 1024 B f32 sum in_place", {{"op", "allreduce"}, {"bytes", 1024}});
    t.span(TracePhase::Iteration, 5000, 5500, 0);
    t.span(TracePhase::Timed, 5000, 6000);
    t.flush();
    const int32_t c = t.add_case("all_pairs 8 B", {{"op", "all_pairs"}});
    t.transfer(TracePhase::Transfer, c, 0, 1, 3, 7000, 7100);
    t.flush();
    // Before the destructor writes "]": the merge must read it as is (a rank that died).
    std::vector<ExecutionOutcome> execs(1);
    execs[0].info = test::make_exec("gloo", 2, 3, 1);
    execs[0].info.world_size = 2;
    const TraceMergeSummary s = merge_job_trace(dir.path(), execs, {2});
    EXPECT_EQ(s.files, 1);
    EXPECT_EQ(s.events, 4);
    ASSERT_EQ(s.missing.size(), 1u);
    EXPECT_EQ(s.missing[0], "exec 2 rank 0");
  }
  const auto events = nlohmann::json::parse(slurp(path));  // closed: plain JSON
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0]["name"], "init");
  EXPECT_EQ(events[0]["ts"], 1.0);
  EXPECT_EQ(events[0]["dur"], 2.0);
  EXPECT_EQ(events[0]["pid"], 1);
  EXPECT_EQ(events[1]["name"], "allreduce 1024 B f32 sum in_place #0");
  EXPECT_EQ(events[1]["args"]["iteration"], 0);
  EXPECT_EQ(events[1]["args"]["phase"], "timed");
  EXPECT_EQ(events[1]["args"]["exec"], 2);
  EXPECT_EQ(events[2]["name"], "allreduce 1024 B f32 sum in_place timed");
  EXPECT_EQ(events[3]["name"], "all_pairs 8 B 0\u21921 transfer");
  EXPECT_EQ(events[3]["args"]["src"], 0);
  EXPECT_EQ(events[3]["args"]["repetition"], 3);
  EXPECT_EQ(events[3]["cat"], "timed");
}

TEST(TraceMerge, MovesEachRanksEventsByItsOffsetAndTelemetryByItsHost) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "trace");
  std::ofstream(rank_trace_path(dir.path(), 0, 0)) << "[\n{\"name\":\"a\",\"ph\":\"X\",\"ts\":10.0,\"dur\":1,\"pid\":0,\"tid\":0},\n";
  std::ofstream(rank_trace_path(dir.path(), 0, 1)) << "[\n{\"name\":\"b\",\"ph\":\"X\",\"ts\":20.0,\"dur\":1,\"pid\":1,\"tid\":0}\n]\n";
  std::ofstream(dir.path() / "telemetry.csv") << "time_unix_ns,host,source,name,value,unit\n"
                                                  "1000030000,h1,hwmon,temp1,50.5,C\n"
                                                  "1000030000,h9,hwmon,temp1,40,C\n"
                                                  "1000030000,h1,nvml,throttle,none,\n";
  std::vector<ExecutionOutcome> execs(1);
  execs[0].info = test::make_exec("gloo", 0, 1, 1);
  execs[0].info.world_size = 2;
  // Rank 1 (host h1) is 7 ms behind rank 0; its wall clock reads 1e9 + its timer.
  ClockEstimate r0{0, "h0", 0, 0, 0, 0}, r1{1, "h1", 7000000, 1000, 0, 1000000000};
  execs[0].clock = clock_record(8, {r0, r1}, {});
  const TraceMergeSummary s = merge_job_trace(dir.path(), execs, {0});
  EXPECT_EQ(s.events, 2);
  EXPECT_EQ(s.counter_samples, 1);
  const auto doc = nlohmann::json::parse(slurp(dir.path() / TraceMergeReporter::kFileName));
  std::map<std::string, double> ts;
  for (const auto& ev : doc["traceEvents"])
    if (ev["ph"] != "M") ts[ev["name"]] = ev["ts"];
  EXPECT_DOUBLE_EQ(ts["a"], 10.0);
  EXPECT_DOUBLE_EQ(ts["b"], 7020.0);             // 20 us + 7 ms
  EXPECT_DOUBLE_EQ(ts["hwmon temp1 (C)"], 7030.0);  // timer 30 us on h1, + 7 ms
  EXPECT_EQ(doc["metadata"]["telemetry_unaligned_hosts"], nlohmann::json::array({"h9"}));
}

// Issue 28 §9: a rank file cut in the middle of an event keeps every whole event before the cut
// and says what was lost; nesting that would exhaust a recursive parser is refused, not parsed.
TEST(TraceMerge, AFileCutMidEventKeepsItsWholeEventsAndSaysWhatWasLost) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "trace");
  std::string text = "[\n";
  for (int i = 0; i < 100; ++i)
    text += fmt::format("{}{{\"name\":\"e{}\",\"ph\":\"X\",\"ts\":{}.0,\"dur\":1,\"pid\":0,\"tid\":0}}\n",
                        i == 0 ? "" : ",", i, i);
  text += ",{\"name\":\"cut\",\"ph\":\"X\",\"ts\":1";  // the rank died here
  std::ofstream(rank_trace_path(dir.path(), 0, 0)) << text;
  std::vector<ExecutionOutcome> execs(1);
  execs[0].info = test::make_exec("gloo", 0, 1, 1);
  const TraceMergeSummary s = merge_job_trace(dir.path(), execs, {0});
  EXPECT_EQ(s.events, 100) << "every whole event before the cut";
  ASSERT_EQ(s.damaged.size(), 1u);
  EXPECT_NE(s.damaged[0].find("cut off in the middle of an event"), std::string::npos) << s.damaged[0];
  EXPECT_NE(s.damaged[0].find("100 event(s) read"), std::string::npos) << s.damaged[0];
  const auto doc = nlohmann::json::parse(slurp(dir.path() / TraceMergeReporter::kFileName));
  EXPECT_EQ(doc["metadata"]["damaged"].size(), 1u);
}

TEST(TraceMerge, DeepNestingIsRefusedWithoutParsingIt) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "trace");
  const std::string deep = "[{\"name\":\"ok\",\"ph\":\"X\",\"ts\":1,\"pid\":0},\n" + std::string(2000000, '[') +
                           std::string(2000000, ']') + "]";
  std::ofstream(rank_trace_path(dir.path(), 0, 0)) << deep;
  std::vector<ExecutionOutcome> execs(1);
  execs[0].info = test::make_exec("gloo", 0, 1, 1);
  const TraceMergeSummary s = merge_job_trace(dir.path(), execs, {0});
  EXPECT_EQ(s.events, 1);
  ASSERT_EQ(s.damaged.size(), 1u);
  EXPECT_NE(s.damaged[0].find("nested deeper than 64 levels"), std::string::npos) << s.damaged[0];
}

}  // namespace
}  // namespace commbench
