#include <gtest/gtest.h>

#include "common/ops.h"
#include "stats/bandwidth.h"

namespace commbench {
namespace {

// The table of docs/metrics.md, written out per op: does algbw count n blocks, and the busbw
// factor as a function of n.
struct Expected {
  OpKind op;
  bool n_blocks;
  double (*factor)(double n);
};

const Expected kTable[] = {
    {OpKind::Allreduce, false, [](double n) { return 2 * (n - 1) / n; }},
    {OpKind::Allgather, true, [](double n) { return (n - 1) / n; }},
    {OpKind::Reducescatter, true, [](double n) { return (n - 1) / n; }},
    {OpKind::Alltoall, true, [](double n) { return (n - 1) / n; }},
    {OpKind::Gather, true, [](double n) { return (n - 1) / n; }},
    {OpKind::Scatter, true, [](double n) { return (n - 1) / n; }},
    {OpKind::Broadcast, false, [](double) { return 1.0; }},
    {OpKind::Reduce, false, [](double) { return 1.0; }},
    {OpKind::PingPong, false, [](double) { return 1.0; }},
    {OpKind::UnidirBw, false, [](double) { return 1.0; }},
    {OpKind::SendRecvRing, false, [](double) { return 1.0; }},
};

TEST(StatsBandwidth, EveryOpAtWorldSizes1248) {
  const uint64_t bytes = 1 << 20;
  const double time_us = 250;
  for (const auto& e : kTable) {
    for (int n : {1, 2, 4, 8}) {
      const std::string what = std::string(op_info(e.op).name) + " n=" + std::to_string(n);
      const double moved = e.n_blocks ? double(bytes) * n : double(bytes);
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
