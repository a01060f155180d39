// JSON of CaseRecord and ExecutionOutcome: round trips, key names, tolerance of old/new files.
#include <gtest/gtest.h>

#include <set>

#include "measure/case_record.h"
#include "report/execution_json.h"
#include "report/summary_json_reporter.h"

namespace commbench {
namespace {

// Every field set to a value different from its default, so a field that is not written or
// not read shows up as a mismatch.
CaseRecord every_field_set() {
  CaseRecord r;
  r.experiment = "exp \"quoted\"";
  r.run = "run-a";
  r.run_index = 3;
  r.backend = "gloo";
  r.world_size = 8;
  r.op = "reducescatter";
  r.bytes = 5'000'000'000ull;  // above 2^32: must not be truncated
  r.count = 1'250'000'000ull;
  r.dtype = "bf16";
  r.redop = "max";
  r.placement = "in_place";
  r.memory = "host_pinned";
  r.root = 2;
  r.src = 3;
  r.dst = 1;
  r.status = "failed";
  r.reason = "rank 3: timeout\nafter 10 s";
  r.timing = "cuda_event";
  r.method = "graph";
  r.rank_aggregation = "max";
  r.total_bytes = 40'000'000'000ull;
  r.target_cv = 0.05;
  r.cv_reached = true;
  r.warmup = 7;
  r.iterations = 11;
  r.time_us = {4, 1.5, 0.5, 1.25, 2.5, 2.75, 3.0, 0.75, 0.5};
  r.algbw_gbps = 12.5;
  r.busbw_gbps = 10.9375;
  r.msg_rate_mps = 2.5;
  r.timed_page_faults = 23;
  r.wrong = 17;
  r.rank_mean_us = {1.0, 1.5, 2.0};
  r.samples_us = {0.5, 1.0, 1.5, 3.0};
  return r;
}

void expect_equal(const CaseRecord& a, const CaseRecord& b) {
  EXPECT_EQ(a.experiment, b.experiment);
  EXPECT_EQ(a.run, b.run);
  EXPECT_EQ(a.run_index, b.run_index);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.world_size, b.world_size);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.redop, b.redop);
  EXPECT_EQ(a.placement, b.placement);
  EXPECT_EQ(a.memory, b.memory);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.src, b.src);
  EXPECT_EQ(a.dst, b.dst);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.reason, b.reason);
  EXPECT_EQ(a.timing, b.timing);
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.rank_aggregation, b.rank_aggregation);
  EXPECT_EQ(a.total_bytes, b.total_bytes);
  EXPECT_EQ(a.target_cv, b.target_cv);
  EXPECT_EQ(a.cv_reached, b.cv_reached);
  EXPECT_EQ(a.warmup, b.warmup);
  EXPECT_EQ(a.iterations, b.iterations);
  EXPECT_EQ(a.time_us.n, b.time_us.n);
  EXPECT_EQ(a.time_us.mean, b.time_us.mean);
  EXPECT_EQ(a.time_us.min, b.time_us.min);
  EXPECT_EQ(a.time_us.p50, b.time_us.p50);
  EXPECT_EQ(a.time_us.p95, b.time_us.p95);
  EXPECT_EQ(a.time_us.p99, b.time_us.p99);
  EXPECT_EQ(a.time_us.max, b.time_us.max);
  EXPECT_EQ(a.time_us.stddev, b.time_us.stddev);
  EXPECT_EQ(a.time_us.cv, b.time_us.cv);
  EXPECT_EQ(a.algbw_gbps, b.algbw_gbps);
  EXPECT_EQ(a.busbw_gbps, b.busbw_gbps);
  EXPECT_EQ(a.msg_rate_mps, b.msg_rate_mps);
  EXPECT_EQ(a.wrong, b.wrong);
  EXPECT_EQ(a.timed_page_faults, b.timed_page_faults);
  EXPECT_EQ(a.rank_mean_us, b.rank_mean_us);
  EXPECT_EQ(a.samples_us, b.samples_us);
}

TEST(ReportCaseJson, RoundTripThroughTextKeepsEveryField) {
  const CaseRecord in = every_field_set();
  const nlohmann::json j = in;
  const CaseRecord out = nlohmann::json::parse(j.dump()).get<CaseRecord>();
  expect_equal(in, out);
}

TEST(ReportCaseJson, OrderedFlavourReadsBackTheSame) {
  const CaseRecord in = every_field_set();
  const nlohmann::ordered_json j = in;
  EXPECT_EQ(j.begin().key(), "experiment");  // declaration order, identity first
  expect_equal(in, nlohmann::json::parse(j.dump()).get<CaseRecord>());
}

TEST(ReportCaseJson, KeysAreTheStructFieldNames) {
  const nlohmann::json j = every_field_set();
  const std::set<std::string> expected{
      "experiment", "run",        "run_index",  "repeat", "backend", "world_size",   "op",
      "bytes",      "count",      "dtype",      "redop",   "placement",    "memory",
      "root",       "status",     "reason",     "timing",  "warmup",       "iterations",
      "time_us",    "algbw_gbps", "busbw_gbps", "wrong",   "rank_mean_us", "samples_us",
      "src",        "dst",        "msg_rate_mps", "method", "rank_aggregation", "total_bytes",
      "target_cv",  "cv_reached", "timed_page_faults"};
  std::set<std::string> keys;
  for (auto& [k, v] : j.items()) keys.insert(k);
  EXPECT_EQ(keys, expected);
}

TEST(ReportCaseJson, MissingFieldsKeepDefaultsAndUnknownKeysAreIgnored) {
  const auto r = nlohmann::json::parse(
                     R"({"type":"case","schema_version":1,"op":"allgather","bytes":64,
                         "a_field_from_the_future":true})")
                     .get<CaseRecord>();
  EXPECT_EQ(r.op, "allgather");
  EXPECT_EQ(r.bytes, 64u);
  EXPECT_EQ(r.status, "ok");  // the struct's default
  EXPECT_EQ(r.wrong, -1);
  EXPECT_EQ(r.timed_page_faults, -1);  // not measured: absent, as in files written before it existed
  EXPECT_EQ(r.timing, "host");
}

TEST(ReportCaseJson, WrongTypeIsAnError) {
  EXPECT_THROW(nlohmann::json::parse(R"({"bytes":"many"})").get<CaseRecord>(),
               nlohmann::json::type_error);
}

TEST(ReportExecutionJson, OutcomeRoundTripIsFlat) {
  ExecutionOutcome o;
  o.info = {2, "run-b", "gloo", 6, 5, 9, 40};
  o.status = "failed";
  o.reason = "rank 1 killed by signal 11 (SIGSEGV) during case 3";
  o.failed_rank = 1;
  o.elapsed_s = 12.25;
  o.cases_done = 3;
  o.metadata = {{"gloo_transport", "tcp"}, {"clock_resolution_ns", 1}};

  const nlohmann::json j = o;
  EXPECT_EQ(j.at("backend"), "gloo");  // info fields sit at the top level
  EXPECT_EQ(j.at("exec_total"), 9);
  EXPECT_FALSE(j.contains("info"));

  const auto back = nlohmann::json::parse(j.dump()).get<ExecutionOutcome>();
  EXPECT_EQ(back.info.run_index, 2);
  EXPECT_EQ(back.info.run, "run-b");
  EXPECT_EQ(back.info.backend, "gloo");
  EXPECT_EQ(back.info.world_size, 6);
  EXPECT_EQ(back.info.exec_index, 5);
  EXPECT_EQ(back.info.exec_total, 9);
  EXPECT_EQ(back.info.case_total, 40);
  EXPECT_EQ(back.status, "failed");
  EXPECT_EQ(back.reason, o.reason);
  EXPECT_EQ(back.failed_rank, 1);
  EXPECT_EQ(back.elapsed_s, 12.25);
  EXPECT_EQ(back.cases_done, 3);
  EXPECT_EQ(back.metadata, o.metadata);
}

TEST(ReportExecutionJson, NullMetadataIsWrittenAsEmptyObject) {
  const nlohmann::json j = ExecutionOutcome{};
  EXPECT_TRUE(j.at("metadata").is_object());
  EXPECT_TRUE(j.at("metadata").empty());
}

// summary.json's clock is the timer the ranks reported, not a fixed string (issue 17, minor).
TEST(ReportSummaryJson, ClockComesFromTheRanksTimers) {
  JobInfo job;
  job.environment = {{"launcher", "local"}, {"clock_resolution_ns", 1}};
  JobResult result;
  EXPECT_EQ(make_summary_json(job, result)["job"]["environment"]["clock"], "none reported (no worker started timing)");

  ExecutionOutcome o;
  o.metadata["ranks"]["0"] = {{"timer", "tsc (invariant, 2400.000 MHz, calibrated against steady_clock)"},
                              {"timer_resolution_ns", 0.4167}};
  o.metadata["ranks"]["1"] = o.metadata["ranks"]["0"];
  result.executions.push_back(o);
  auto env = make_summary_json(job, result)["job"]["environment"];
  EXPECT_EQ(env["clock"], "tsc (invariant, 2400.000 MHz, calibrated against steady_clock)");
  EXPECT_DOUBLE_EQ(env["clock_resolution_ns"].get<double>(), 0.4167);
  EXPECT_EQ(env["launcher"], "local");

  // Each rank calibrates the counter itself: the same clock a kHz apart is one clock, said with
  // its range (it once read as ranks that disagree).
  o.metadata["ranks"]["1"]["timer"] = "tsc (invariant, 2400.001 MHz, calibrated against steady_clock)";
  result.executions.push_back(o);
  env = make_summary_json(job, result)["job"]["environment"];
  EXPECT_EQ(env["clock"], "tsc (invariant, 2400.000–2400.001 MHz, calibrated against steady_clock)");

  // Ranks that disagree (COMMBENCH_TIMER set on one host): every distinct clock, the coarsest step.
  o.metadata["ranks"]["1"] = {{"timer", "steady_clock (COMMBENCH_TIMER=steady)"}, {"timer_resolution_ns", 1.0}};
  result.executions.push_back(o);
  env = make_summary_json(job, result)["job"]["environment"];
  ASSERT_TRUE(env["clock"].is_array());
  EXPECT_EQ(env["clock"].size(), 3u);
  EXPECT_DOUBLE_EQ(env["clock_resolution_ns"].get<double>(), 1.0);
}

}  // namespace
}  // namespace commbench
