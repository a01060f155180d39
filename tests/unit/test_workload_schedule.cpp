// DDP buckets and the step schedules of DDP and FSDP (core/src/workload/step_schedule.h): bucket
// contents and order as torch DDP fills them, every collective posted once and waited once after
// its post, posts placed where the overlap setting says, compute shares summing to one.
#include <gtest/gtest.h>

#include <numeric>

#include "report/scaling.h"
#include "test_report_helpers.h"
#include "workload/step_schedule.h"

namespace commbench::workload {

namespace {

Model schedule_test_model() {
  // 4-byte elements: 1 MiB, 3 MiB, 2 MiB, 0.5 MiB of gradients; FLOPs 1:2:3:4.
  return Model{"custom", "test",
               {{"a", 262144, 0, 1e6}, {"b", 786432, 0, 2e6}, {"c", 524288, 0, 3e6}, {"d", 131072, 0, 4e6}}};
}

double schedule_compute_total(const StepPlan& p) {
  double s = 0;
  for (const auto& a : p.actions)
    if (a.kind == ActionKind::Compute) s += a.share;
  return s;
}

// Every comm: exactly one post, then exactly one wait after it.
void expect_posted_then_waited(const StepPlan& p) {
  std::vector<int> posted(p.comms.size(), -1), waited(p.comms.size(), -1);
  for (size_t i = 0; i < p.actions.size(); ++i) {
    const auto& a = p.actions[i];
    if (a.kind == ActionKind::Post) { EXPECT_EQ(posted[a.index], -1); posted[a.index] = static_cast<int>(i); }
    if (a.kind == ActionKind::Wait) { EXPECT_EQ(waited[a.index], -1); waited[a.index] = static_cast<int>(i); }
  }
  for (size_t c = 0; c < p.comms.size(); ++c) {
    EXPECT_GE(posted[c], 0) << p.comms[c].what;
    EXPECT_GT(waited[c], posted[c]) << p.comms[c].what;
  }
}

// Index in actions of the backward compute of `layer`.
size_t schedule_backward_of(const StepPlan& p, int layer) {
  for (size_t i = 0; i < p.actions.size(); ++i)
    if (p.actions[i].kind == ActionKind::Compute && p.actions[i].backward && p.actions[i].index == layer) return i;
  return SIZE_MAX;
}

}  // namespace

TEST(WorkloadSchedule, DdpBucketsFillInReverseLayerOrder) {
  const auto b = ddp_buckets(schedule_test_model(), 4, 2u << 20);  // 2 MiB cap
  // Reverse: d (0.5) + c (2) = 2.5 MiB >= 2 -> bucket 0; b (3) -> bucket 1; a (1) -> bucket 2.
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].layers, (std::vector<int>{3, 2}));
  EXPECT_EQ(b[0].elements, 524288u + 131072u);
  EXPECT_EQ(b[0].first_element, 262144u + 786432u);
  EXPECT_EQ(b[1].layers, (std::vector<int>{1}));
  EXPECT_EQ(b[1].first_element, 262144u);
  EXPECT_EQ(b[2].layers, (std::vector<int>{0}));
  EXPECT_EQ(b[2].first_element, 0u);
  uint64_t total = 0;
  for (const auto& k : b) total += k.elements;
  EXPECT_EQ(total, schedule_test_model().parameters());
}

TEST(WorkloadSchedule, DefaultCapGivesTorchLikeBucketCountForResNet50) {
  const Model m = *model_preset("resnet50");
  const auto b = ddp_buckets(m, 4, 25u << 20);
  // 97.5 MiB of f32 gradients in >= 25 MiB buckets, layers unsplit: 3 or 4 buckets.
  EXPECT_GE(b.size(), 3u);
  EXPECT_LE(b.size(), 4u);
  for (size_t i = 0; i + 1 < b.size(); ++i) EXPECT_GE(b[i].elements * 4, 25u << 20);
  EXPECT_EQ(b.front().layers.front(), static_cast<int>(m.layers.size()) - 1);  // fc first
  EXPECT_EQ(b.back().layers.back(), 0);
}

TEST(WorkloadSchedule, DdpOverlapPostsEachBucketAfterItsLastLayer) {
  const StepPlan p = plan_step(schedule_test_model(), Sharding::Ddp, true, 2u << 20, 4, 2);
  ASSERT_EQ(p.comms.size(), 3u);
  expect_posted_then_waited(p);
  EXPECT_NEAR(schedule_compute_total(p), 1.0, 1e-12);
  // Bucket 0 (layers 3, 2) posted right after layer 2's backward, before layer 1's.
  const size_t post0 = schedule_backward_of(p, 2) + 1;
  ASSERT_EQ(p.actions[post0].kind, ActionKind::Post);
  EXPECT_EQ(p.actions[post0].index, 0);
  EXPECT_LT(post0, schedule_backward_of(p, 1));
  EXPECT_EQ(p.comm_bytes, schedule_test_model().parameters() * 4);
  for (const auto& c : p.comms) EXPECT_EQ(c.op, OpKind::Allreduce);
  // Shares: FLOPs 1:2:3:4 of 10; layer 3's backward = 0.4 x 2/3.
  EXPECT_NEAR(p.actions[schedule_backward_of(p, 3)].share, 0.4 * 2 / 3, 1e-12);
}

TEST(WorkloadSchedule, DdpWithoutOverlapPostsAfterTheWholeBackward) {
  const StepPlan p = plan_step(schedule_test_model(), Sharding::Ddp, false, 2u << 20, 4, 2);
  expect_posted_then_waited(p);
  const size_t last_backward = schedule_backward_of(p, 0);
  for (size_t i = 0; i < p.actions.size(); ++i)
    if (p.actions[i].kind != ActionKind::Compute) EXPECT_GT(i, last_backward);
}

TEST(WorkloadSchedule, FsdpGathersBeforeComputeAndScattersAfterBackward) {
  const Model m = schedule_test_model();
  for (bool overlap : {true, false}) {
    const StepPlan p = plan_step(m, Sharding::Fsdp, overlap, 0, 4, 4);
    // Three collectives per layer.
    ASSERT_EQ(p.comms.size(), 12u);
    expect_posted_then_waited(p);
    EXPECT_NEAR(schedule_compute_total(p), 1.0, 1e-12);
    int allgathers = 0, reducescatters = 0;
    for (const auto& c : p.comms) {
      allgathers += c.op == OpKind::Allgather;
      reducescatters += c.op == OpKind::Reducescatter;
    }
    EXPECT_EQ(allgathers, 8);
    EXPECT_EQ(reducescatters, 4);
    // Layer b's shard: 786432 / 4; its allgathers wait before both of its computes.
    EXPECT_EQ(p.comms[3].count, 196608u);
    for (size_t i = 0; i < p.actions.size(); ++i) {
      const auto& a = p.actions[i];
      if (a.kind != ActionKind::Compute) continue;
      const int ag = a.index * 3 + (a.backward ? 1 : 0);
      bool waited_before = false;
      for (size_t j = 0; j < i; ++j)
        waited_before |= p.actions[j].kind == ActionKind::Wait && p.actions[j].index == ag;
      EXPECT_TRUE(waited_before) << "layer " << a.index << (a.backward ? " backward" : " forward");
      // The reducescatter is posted after the layer's backward.
      if (a.backward) {
        bool posted_before = false;
        for (size_t j = 0; j < i; ++j)
          posted_before |= p.actions[j].kind == ActionKind::Post && p.actions[j].index == a.index * 3 + 2;
        EXPECT_FALSE(posted_before);
      }
    }
    // Buffers: the full (padded) parameters plus the shards, on each side.
    EXPECT_EQ(p.send_elements, p.recv_elements);
    EXPECT_EQ(p.send_elements, (262144u + 786432u + 524288u + 131072u) * 5 / 4);
  }
}

TEST(WorkloadSchedule, FsdpOverlapPrefetchesTheNextLayer) {
  const StepPlan p = plan_step(schedule_test_model(), Sharding::Fsdp, true, 0, 4, 2);
  // The forward allgather of layer 1 (comm 3) is posted before layer 0's forward compute.
  size_t post_next = SIZE_MAX, fwd0 = SIZE_MAX;
  for (size_t i = 0; i < p.actions.size(); ++i) {
    if (p.actions[i].kind == ActionKind::Post && p.actions[i].index == 3) post_next = i;
    if (p.actions[i].kind == ActionKind::Compute && !p.actions[i].backward && p.actions[i].index == 0) fwd0 = i;
  }
  EXPECT_LT(post_next, fwd0);
}

TEST(WorkloadSchedule, ModelWithoutFlopsSplitsComputeEvenly) {
  const Model m = even_model(1000, 5);
  const StepPlan p = plan_step(m, Sharding::Ddp, true, 1 << 20, 4, 1);
  EXPECT_NEAR(schedule_compute_total(p), 1.0, 1e-12);
  EXPECT_NEAR(p.actions[0].share, 0.2 / 3, 1e-12);
  ASSERT_EQ(p.comms.size(), 1u);  // 4000 bytes < 1 MiB: one bucket
}

// Scaling of workload records (report/scaling.h): samples/s per world size against the smallest,
// checked against numbers worked by hand.
TEST(WorkloadScaling, SamplesPerSecondAgainstTheSmallestWorld) {
  std::vector<CaseRecord> records;
  for (auto [world, samples] : {std::pair{2, 180.0}, {1, 100.0}, {4, 320.0}})
    records.push_back(test::make_workload_case(world, 32, samples, 1000));
  // A record of the other overlap value is a series of its own (one point: left out).
  records.push_back(records[0]);
  records.back().workload["overlap"] = false;
  const auto series = scaling_series(records, {});
  ASSERT_EQ(series.size(), 1u);
  const auto& s = series[0];
  EXPECT_EQ(s.base_world_size, 1);
  EXPECT_EQ(s.workload, "resnet50 ddp overlap on");
  ASSERT_EQ(s.points.size(), 3u);
  EXPECT_DOUBLE_EQ(s.points[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(s.points[1].efficiency, (180.0 / 100.0) / 2);  // 0.9
  EXPECT_DOUBLE_EQ(s.points[2].efficiency, (320.0 / 100.0) / 4);  // 0.8
  EXPECT_NE(describe_scaling(s).find("weak scaling of batch 32 per rank"), std::string::npos);
}

}  // namespace commbench::workload
