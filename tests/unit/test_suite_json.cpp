// summary.json's "suite" section (report/suite_json.h): seed 004's grouping of the job's records.
#include <gtest/gtest.h>

#include "report/summary_json_reporter.h"
#include "report/suite_json.h"

namespace commbench {
namespace {

CaseRecord suite_case(const char* op, int world, double mean_us) {
  CaseRecord c;
  c.run = "comm";
  c.backend = "gloo";
  c.op = op;
  c.world_size = world;
  c.bytes = 1 << 20;
  c.total_bytes = c.bytes;
  c.dtype = "f32";
  c.memory = "host";
  c.time_us.mean = mean_us;
  c.busbw_gbps = 1.5;
  return c;
}

TEST(SuiteJson, GroupsCasesByOpAndRecordsByKind) {
  JobResult result;
  result.cases = {suite_case("allreduce", 2, 100), suite_case("allgather", 2, 50), suite_case("allreduce", 4, 125),
                  suite_case("data_parallel", 2, 9000)};
  result.cases[3].samples_us = {9000, 9000};
  result.cases[1].status = "failed";
  result.cases[1].reason = "rank 1 crashed";
  result.records.push_back({"memory", {{"model", "resnet50"}, {"batch_size", 8}}});
  result.records.push_back({"memory", {{"model", "resnet50"}, {"batch_size", 16}}});
  nlohmann::ordered_json scaling = nlohmann::ordered_json::array();
  scaling.push_back({{"op", "allreduce"}});
  const auto suite = suite_json(result, scaling);

  ASSERT_EQ(suite["communication"]["allreduce"].size(), 2u);
  EXPECT_EQ(suite["communication"]["allreduce"][1]["world_size"], 4);
  EXPECT_EQ(suite["communication"]["allreduce"][1]["time_us"], 125.0);
  EXPECT_EQ(suite["communication"]["allreduce"][0]["busbw_gbps"], 1.5);
  ASSERT_EQ(suite["communication"]["allgather"].size(), 1u);
  EXPECT_EQ(suite["communication"]["allgather"][0]["reason"], "rank 1 crashed");
  EXPECT_FALSE(suite["communication"]["allgather"][0].contains("busbw_gbps")) << "no figures for a failed case";
  ASSERT_EQ(suite["memory"].size(), 2u);
  EXPECT_EQ(suite["memory"][1]["batch_size"], 16);
  EXPECT_FALSE(suite["communication"].contains("data_parallel")) << "training steps are not communication cases";
  ASSERT_EQ(suite["training"].size(), 1u);
  EXPECT_EQ(suite["training"][0]["time_us"]["mean"], 9000.0);
  EXPECT_FALSE(suite["training"][0].contains("samples_us"));
  EXPECT_EQ(suite["scaling"][0]["op"], "allreduce");
}

TEST(SuiteJson, SummaryHoldsTheSuiteAndEveryRecordTagged) {
  JobInfo job;
  JobResult result;
  result.cases = {suite_case("allreduce", 2, 100), suite_case("allreduce", 4, 125)};
  result.records.push_back({"memory", {{"model", "custom"}, {"status", "ok"}}});
  const auto doc = make_summary_json(job, result);
  ASSERT_TRUE(doc.contains("suite"));
  for (const char* section : {"communication", "training", "memory", "scaling"})
    EXPECT_TRUE(doc["suite"].contains(section)) << section;
  EXPECT_EQ(doc["suite"]["scaling"], doc["scaling"]);
  ASSERT_EQ(doc["suite"]["scaling"].size(), 1u) << "allreduce at 2 and 4 ranks is one series";
  ASSERT_EQ(doc["records"].size(), 1u);
  EXPECT_EQ(doc["records"][0]["type"], "memory");
  EXPECT_EQ(doc["records"][0]["model"], "custom");
}

}  // namespace
}  // namespace commbench
