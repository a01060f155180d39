// The all-pairs sweep's pure parts: the configuration list and its shuffle, the payload, the
// execution log file and the src x dst matrices in summary.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "measure/all_pairs.h"
#include "report/clock_alignment.h"
#include "report/execution_log_reporter.h"
#include "report/pair_matrix.h"
#include "test_report_helpers.h"

namespace commbench {
namespace {

TEST(AllPairsConfigs, EveryDirectedPairAndSizeExactlyOnce) {
  const auto configs = all_pairs_configs(4, 31, 42);
  ASSERT_EQ(configs.size(), 4u * 3u * 31u);  // seed 003: 12 pairs x 31 sizes = 372
  std::set<std::tuple<int, int, size_t>> seen;
  std::set<int> ids;
  for (const auto& c : configs) {
    EXPECT_NE(c.src, c.dst);
    EXPECT_TRUE(seen.insert({c.src, c.dst, c.size_index}).second) << "duplicate configuration";
    ids.insert(c.id);
  }
  EXPECT_EQ(ids.size(), configs.size());
  EXPECT_EQ(*ids.begin(), 0);
  EXPECT_EQ(*ids.rbegin(), static_cast<int>(configs.size()) - 1);
}

TEST(AllPairsConfigs, IdsFollowSrcDstSizeOrder) {
  auto configs = all_pairs_configs(3, 2, 7);
  std::sort(configs.begin(), configs.end(), [](auto& a, auto& b) { return a.id < b.id; });
  // (0,1,s0) (0,1,s1) (0,2,s0) (0,2,s1) (1,0,s0) ...
  EXPECT_EQ(std::tie(configs[0].src, configs[0].dst, configs[0].size_index), std::make_tuple(0, 1, size_t{0}));
  EXPECT_EQ(std::tie(configs[1].src, configs[1].dst, configs[1].size_index), std::make_tuple(0, 1, size_t{1}));
  EXPECT_EQ(std::tie(configs[2].src, configs[2].dst, configs[2].size_index), std::make_tuple(0, 2, size_t{0}));
  EXPECT_EQ(std::tie(configs[4].src, configs[4].dst, configs[4].size_index), std::make_tuple(1, 0, size_t{0}));
}

TEST(AllPairsConfigs, ShuffleIsReproducibleAndDependsOnTheSeed) {
  auto ids = [](const std::vector<AllPairsConfig>& v) {
    std::vector<int> out;
    for (const auto& c : v) out.push_back(c.id);
    return out;
  };
  const auto a = ids(all_pairs_configs(4, 31, 42));
  EXPECT_EQ(a, ids(all_pairs_configs(4, 31, 42)));  // a rerun runs the same order
  EXPECT_NE(a, ids(all_pairs_configs(4, 31, 43)));
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(a, sorted) << "the list was not shuffled";
  // Pinned: the order must not change with the compiler or standard library (own RNG), or
  // reruns on another machine would not repeat it.
  EXPECT_EQ(std::vector<int>(a.begin(), a.begin() + 5), (std::vector<int>{18, 203, 351, 263, 64}));
}

TEST(AllPairsPayload, NeverZeroDiffersBetweenSendersAndIsDeterministic) {
  int differing = 0;
  for (uint64_t i = 0; i < 4096; ++i) {
    const uint8_t b0 = all_pairs_payload_byte(42, 0, i);
    EXPECT_NE(b0, 0) << "byte " << i;
    EXPECT_EQ(b0, all_pairs_payload_byte(42, 0, i));
    differing += b0 != all_pairs_payload_byte(42, 1, i);
  }
  EXPECT_GT(differing, 4000);  // two senders' payloads are unrelated, not shifted copies
}

TEST(ExecutionLog, WritesSeedColumnsOnlyWhenTransfersArrive) {
  test::TempDir dir;
  ExecutionLogReporter log(dir.path());
  const auto file = dir.path() / ExecutionLogReporter::kFileName;
  EXPECT_FALSE(std::filesystem::exists(file)) << "a job without all_pairs gets no log";
  ExecutionOutcome done;
  done.info = test::make_exec("ucx", 0, 1, 12);
  done.info.repeat = 1;  // the second of the run's repeats: its rows must say so
  log.execution_done(done);
  EXPECT_FALSE(std::filesystem::exists(file)) << "an execution without transfers writes nothing";
  log.transfers_logged(done.info, {{5, 0, 1, 1024, 0, 1000, 1600, 600, 0}, {2, 1, 0, 8, 0, 2000, 2100, 100, 1}});
  log.transfers_logged(done.info, {{5, 0, 1, 1024, 1, 3000, 3400, 400, 0}});
  EXPECT_FALSE(std::filesystem::exists(file)) << "held until the end-of-execution clock estimate";
  log.execution_done(done);  // no clock record (nothing to align): the senders' own times
  const auto lines = test::read_lines(file);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "run,backend,world_size,config_id,src,dst,size,repetition,timestamp_start_ns,"
                      "timestamp_end_ns,duration_ns,repeat");
  EXPECT_EQ(lines[1], "sweep,ucx,4,5,0,1,1024,0,1000,1600,600,1");
  EXPECT_EQ(lines[2], "sweep,ucx,4,2,1,0,8,0,2000,2100,100,1");
  EXPECT_EQ(lines[3], "sweep,ucx,4,5,0,1,1024,1,3000,3400,400,1");
}

TEST(ExecutionLog, TimestampsMoveOntoRankZerosTimelineByTheTimingRanksClock) {
  test::TempDir dir;
  ExecutionLogReporter log(dir.path());
  ExecutionOutcome done;
  done.info = test::make_exec("ucx", 0, 1, 12);
  // Rank 1's clock is 5000 ns behind rank 0's at its time 1000 and 5100 behind at 101000:
  // 1000 ppm, so at 51000 it is 5050 behind.
  ClockEstimate r0{0, "a", 0, 0, 0, 0}, s1{1, "b", 5000, 100, 1000, 0}, e1{1, "b", 5100, 100, 101000, 0};
  done.clock = clock_record(8, {r0, s1}, {r0, e1});
  EXPECT_NEAR(done.clock["ranks"][1]["drift_ppm"].get<double>(), 1000.0, 1e-9);
  EXPECT_EQ(done.clock["ranks"][1]["error_bound_ns"], 50);
  log.transfers_logged(done.info, {{3, 1, 0, 8, 0, 51000, 52000, 1000, 1}, {4, 0, 1, 8, 0, 60000, 61000, 1000, 0}});
  log.execution_done(done);
  const auto lines = test::read_lines(dir.path() / ExecutionLogReporter::kFileName);
  ASSERT_EQ(lines.size(), 3u);
  // The end is the start plus the sample, so end - start = duration on every row (seed 003).
  EXPECT_EQ(lines[1], "sweep,ucx,4,3,1,0,8,0,56050,57050,1000,0") << "sender rank 1: moved";
  EXPECT_EQ(lines[2], "sweep,ucx,4,4,0,1,8,0,60000,61000,1000,0") << "sender rank 0: as it was";
  // A receiver's interval (two clocks, its time was the sample) moves by the receiver's clock.
  log.transfers_logged(done.info, {{5, 0, 1, 8, 1, 51000, 52000, 1000, 1}});
  log.execution_done(done);
  EXPECT_EQ(test::read_lines(dir.path() / ExecutionLogReporter::kFileName).back(), "sweep,ucx,4,5,0,1,8,1,56050,57050,1000,0");
}

// The sample of one transfer: with one clock, from the sender's post to the receiver seeing the
// message, so a receiver whose own wait was short (it came late to a message already there)
// cannot make the transfer look faster than it was; across clocks the longer own time.
TEST(AllPairsSample, OneClockTimesFromTheSendersPostToTheArrivalSeen) {
  // Sender: posted at host time 10,000, its eager send completed locally 200 ns later.
  const PairTimes sender{500, 700, 10000};
  // Receiver: its own wait took 100 ns, but it saw the message at host time 13,000.
  const PairTimes receiver{900, 1000, 13000};
  EXPECT_EQ(transfer_duration_ns(true, sender, receiver), 3000);
  EXPECT_EQ(transfer_duration_ns(false, sender, receiver), 200) << "different clocks: the own times only";
  // A rendezvous send that completes after the receiver saw the data: the sender's time rules.
  EXPECT_EQ(transfer_duration_ns(true, PairTimes{0, 5000, 10000}, PairTimes{0, 2500, 12500}), 5000);
  EXPECT_EQ(transfer_duration_ns(false, PairTimes{0, 100, 0}, PairTimes{0, 2500, 0}), 2500);
}

TEST(ExecutionLog, EntriesSurviveTheWorkerPipeAsJson) {
  const TransferLogEntry e{7, 2, 3, uint64_t{1} << 30, 4, 123456789012, 123456789999, 987, 3};
  const nlohmann::json j = e;
  const TransferLogEntry back = j.get<TransferLogEntry>();
  EXPECT_EQ(std::tie(back.config_id, back.src, back.dst, back.bytes, back.repetition, back.start_ns,
                     back.end_ns, back.duration_ns, back.timer_rank),
            std::tie(e.config_id, e.src, e.dst, e.bytes, e.repetition, e.start_ns, e.end_ns,
                     e.duration_ns, e.timer_rank));
}

CaseRecord pair_record(int src, int dst, uint64_t bytes, double time_us) {
  CaseRecord r = test::make_case("ucx", "all_pairs", bytes, time_us, 3);
  r.src = src;
  r.dst = dst;
  return r;
}

TEST(PairMatrix, OneBandwidthAndLatencyMatrixPerSizeWithPairsInPlace) {
  std::vector<CaseRecord> records;
  for (uint64_t bytes : {uint64_t{1} << 20, uint64_t{8}})
    for (int s = 0; s < 3; ++s)
      for (int d = 0; d < 3; ++d)
        if (s != d) records.push_back(pair_record(s, d, bytes, 100.0 * (s + 1) + d));
  records[1].status = "failed";  // (0,2) at 1 MiB
  std::vector<const CaseRecord*> ptrs;
  for (const auto& r : records) ptrs.push_back(&r);
  std::string md;
  append_pair_matrices(md, ptrs);
  // Sizes ascending although 1 MiB came first.
  const size_t small = md.find("· 8 B (8 B)"), large = md.find("· 1 MiB (1048576 B)");
  ASSERT_NE(small, std::string::npos) << md;
  ASSERT_NE(large, std::string::npos) << md;
  EXPECT_LT(small, large);
  // Row 1 of the 8 B latency matrix: 1->0 took 200 us, 1->2 202 us (p50 of the samples).
  EXPECT_NE(md.find("| **1** | 200.00 | · | 202.00 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| **0** | · | 101.00 | failed |"), std::string::npos) << md;
  size_t headings = 0;
  for (size_t at = md.find("### all_pairs"); at != std::string::npos; at = md.find("### all_pairs", at + 1))
    ++headings;
  EXPECT_EQ(headings, 2u);
}

TEST(PairMatrix, WithRepeatsEachPairShowsItsMedianRepeatAndSaysSo) {
  // Three repeats of a 2-rank matrix: the cell once showed the last repeat, unlabelled.
  std::vector<CaseRecord> records;
  for (int repeat = 0; repeat < 3; ++repeat)
    for (int s = 0; s < 2; ++s) {
      const double times[3] = {30.0, 20.0, 10.0};  // the median is repeat 1, not the last
      CaseRecord r = pair_record(s, 1 - s, 8, times[repeat] + s);
      r.repeat = repeat;
      records.push_back(r);
    }
  std::vector<const CaseRecord*> ptrs;
  for (const auto& r : records) ptrs.push_back(&r);
  std::string md;
  append_pair_matrices(md, ptrs);
  EXPECT_NE(md.find("With 3 repeats: each pair's median repeat (by mean time)."), std::string::npos) << md;
  EXPECT_NE(md.find("| **0** | · | 20.00 |"), std::string::npos) << md;  // 0->1: 30, 20, 10
  EXPECT_NE(md.find("| **1** | 21.00 | · |"), std::string::npos) << md;  // 1->0: 31, 21, 11
}

}  // namespace
}  // namespace commbench
