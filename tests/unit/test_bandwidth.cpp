#include <gtest/gtest.h>

#include <cmath>

#include "common/ops.h"
#include "stats/bandwidth.h"

namespace commbench {
namespace {

// The table of docs/metrics.md, written out per op: how many messages of `bytes` algbw counts,
// and the busbw factor, as functions of n.
struct Expected {
  OpKind op;
  double (*blocks)(double n);
  double (*factor)(double n);
};

double one(double) { return 1.0; }
double n_blocks(double n) { return n; }

const Expected kTable[] = {
    {OpKind::Allreduce, one, [](double n) { return 2 * (n - 1) / n; }},
    {OpKind::Allgather, n_blocks, [](double n) { return (n - 1) / n; }},
    {OpKind::Reducescatter, n_blocks, [](double n) { return (n - 1) / n; }},
    {OpKind::Alltoall, n_blocks, [](double n) { return (n - 1) / n; }},
    {OpKind::Gather, n_blocks, [](double n) { return (n - 1) / n; }},
    {OpKind::Scatter, n_blocks, [](double n) { return (n - 1) / n; }},
    {OpKind::Broadcast, one, [](double) { return 1.0; }},
    {OpKind::Reduce, one, [](double) { return 1.0; }},
    {OpKind::PingPong, one, [](double) { return 1.0; }},
    {OpKind::UnidirBw, one, [](double) { return 1.0; }},
    {OpKind::SendRecvRing, one, [](double) { return 1.0; }},
    {OpKind::AllPairs, one, [](double) { return 1.0; }},
    // Both directions at once (osu_bibw), and one message per pair of n/2 (osu_mbw_mr).
    {OpKind::BidirBw, [](double) { return 2.0; }, [](double) { return 1.0; }},
    {OpKind::MsgRate, [](double n) { return std::floor(n / 2); }, [](double) { return 1.0; }},
};

TEST(StatsBandwidth, EveryOpAtWorldSizes1248) {
  const uint64_t bytes = 1 << 20;
  const double time_us = 250;
  for (const auto& e : kTable) {
    for (int n : {1, 2, 4, 8}) {
      const std::string what = std::string(op_info(e.op).name) + " n=" + std::to_string(n);
      const double moved = double(bytes) * e.blocks(n);
      EXPECT_DOUBLE_EQ(algbw_bytes(e.op, bytes, n), moved) << what;
      EXPECT_DOUBLE_EQ(busbw_factor(e.op, n), e.factor(n)) << what;
      const Bandwidth bw = bandwidth(e.op, bytes, n, time_us);
      const double algbw = moved / (time_us * 1e-6) / 1e9;
      EXPECT_DOUBLE_EQ(bw.algbw_gbps, algbw) << what;
      EXPECT_DOUBLE_EQ(bw.busbw_gbps, algbw * e.factor(n)) << what;
    }
  }
}

TEST(StatsBandwidth, TableCoversEveryOpExceptBarrier) {
  size_t covered = 0;
  for (const auto& info : all_ops()) {
    bool found = false;
    for (const auto& e : kTable) found = found || e.op == info.kind;
    if (info.kind == OpKind::Barrier)
      EXPECT_FALSE(found);
    else
      EXPECT_TRUE(found) << info.name << " has no expected bandwidth formula in this test";
    covered += found;
  }
  EXPECT_EQ(covered, std::size(kTable));
}

TEST(StatsBandwidth, HandComputedExamples) {
  // 1 GB allreduce in 1 s on 4 ranks: algbw 1 GB/s, busbw 2*3/4 = 1.5 GB/s.
  Bandwidth bw = bandwidth(OpKind::Allreduce, 1'000'000'000, 4, 1e6);
  EXPECT_DOUBLE_EQ(bw.algbw_gbps, 1.0);
  EXPECT_DOUBLE_EQ(bw.busbw_gbps, 1.5);
  // 1 MB per rank allgather on 8 ranks in 100 us: 8 MB / 100 us = 80 GB/s, busbw 70 GB/s.
  bw = bandwidth(OpKind::Allgather, 1'000'000, 8, 100);
  EXPECT_DOUBLE_EQ(bw.algbw_gbps, 80.0);
  EXPECT_DOUBLE_EQ(bw.busbw_gbps, 70.0);
  // Ping-pong: 4 KB over a half round trip of 2 us -> 2.048 GB/s, busbw the same.
  bw = bandwidth(OpKind::PingPong, 4096, 2, 2.0);
  EXPECT_DOUBLE_EQ(bw.algbw_gbps, 2.048);
  EXPECT_DOUBLE_EQ(bw.busbw_gbps, 2.048);
}

TEST(StatsBandwidth, MessageRateCountsMessagesPerPatternTime) {
  // 8 messages in flight, 0.5 us per message: unidir 2 M msg/s; bidir moves two per time unit;
  // msg_rate on 6 ranks has 3 pairs; pingpong is not a message-rate pattern.
  EXPECT_DOUBLE_EQ(message_rate_mps(OpKind::UnidirBw, 2, 0.5), 2.0);
  EXPECT_DOUBLE_EQ(message_rate_mps(OpKind::BidirBw, 2, 0.5), 4.0);
  EXPECT_DOUBLE_EQ(message_rate_mps(OpKind::MsgRate, 6, 0.5), 6.0);
  EXPECT_DOUBLE_EQ(message_rate_mps(OpKind::MsgRate, 7, 0.5), 6.0);  // odd rank sits out
  EXPECT_EQ(message_rate_mps(OpKind::PingPong, 2, 0.5), 0.0);
  EXPECT_EQ(message_rate_mps(OpKind::UnidirBw, 2, 0.0), 0.0);  // no time, no rate
}

TEST(StatsBandwidth, WorldOfOneGivesZeroBusbwForCollectivesThatMoveNothing) {
  EXPECT_EQ(busbw_factor(OpKind::Allreduce, 1), 0);
  EXPECT_EQ(busbw_factor(OpKind::Allgather, 1), 0);
  EXPECT_EQ(busbw_factor(OpKind::Broadcast, 1), 1);
  const Bandwidth bw = bandwidth(OpKind::Allreduce, 1000, 1, 1);
  EXPECT_DOUBLE_EQ(bw.algbw_gbps, 1.0);
  EXPECT_EQ(bw.busbw_gbps, 0);
}

TEST(StatsBandwidth, BarrierMovesNoBytes) {
  EXPECT_EQ(algbw_bytes(OpKind::Barrier, 4096, 4), 0);
  EXPECT_EQ(busbw_factor(OpKind::Barrier, 4), 0);
  const Bandwidth bw = bandwidth(OpKind::Barrier, 4096, 4, 10);
  EXPECT_EQ(bw.algbw_gbps, 0);
  EXPECT_EQ(bw.busbw_gbps, 0);
}

TEST(StatsBandwidth, NonPositiveTimeOrWorldGivesZeroNotInfinity) {
  for (double t : {0.0, -1.0}) {
    const Bandwidth bw = bandwidth(OpKind::Allreduce, 1 << 20, 4, t);
    EXPECT_EQ(bw.algbw_gbps, 0);
    EXPECT_EQ(bw.busbw_gbps, 0);
  }
  EXPECT_EQ(busbw_factor(OpKind::Allreduce, 0), 0);
  EXPECT_EQ(bandwidth(OpKind::Allgather, 1 << 20, 0, 10).busbw_gbps, 0);
}

}  // namespace
}  // namespace commbench
