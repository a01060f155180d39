// Every gloo collective on 2, 3 and 4 in-process ranks: every dtype it moves, every dtype and
// reduce op it reduces, in and out of place, counts 1/7/1000, first and last rank as root.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "patterns.h"
#include "test_support.h"

namespace commbench::test {
namespace {

class GlooCollectives : public ::testing::TestWithParam<int> {
 protected:
  int world() const { return GetParam(); }
  std::vector<int> roots() const { return {0, world() - 1}; }
};

TEST_P(GlooCollectives, AllreduceRing) {
  const auto failures = run_cases(world(), test_options(), reduction_cases(CB_OP_ALLREDUCE, {0}));
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, Reduce) {
  const auto failures = run_cases(world(), test_options(), reduction_cases(CB_OP_REDUCE, roots()));
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, ReduceScatter) {
  const auto failures = run_cases(world(), test_options(), reduction_cases(CB_OP_REDUCESCATTER, {0}));
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, Allgather) {
  const auto failures = run_cases(world(), test_options(), movement_cases(CB_OP_ALLGATHER, {0}));
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, Broadcast) {
  const auto failures = run_cases(world(), test_options(), movement_cases(CB_OP_BROADCAST, roots()));
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, Alltoall) {
  const auto failures = run_cases(world(), test_options(), movement_cases(CB_OP_ALLTOALL, {0}));
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, Gather) {
  const auto failures = run_cases(world(), test_options(), movement_cases(CB_OP_GATHER, roots()));
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, Scatter) {
  const auto failures = run_cases(world(), test_options(), movement_cases(CB_OP_SCATTER, roots()));
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, BarrierHoldsEveryRankUntilAllArrive) {
  std::atomic<int> arrived{0};
  const auto failures = run_ranks(gloo_plugin_path(), world(), test_options(), [&](RankSession& s) {
    // Later ranks arrive later: without a real barrier rank 0 would leave before they arrive.
    std::this_thread::sleep_for(std::chrono::milliseconds(30 * s.rank()));
    arrived.fetch_add(1);
    const Status status = s.run(make_args(CB_OP_BARRIER, nullptr, nullptr, 0, CB_DTYPE_UINT8));
    if (!status.ok()) throw std::runtime_error("barrier failed: " + status.message);
    if (arrived.load() != s.world_size())
      throw std::runtime_error("left the barrier after only " + std::to_string(arrived.load()) + " ranks arrived");
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, CountZeroCompletesWithoutBuffers) {
  const auto failures = run_ranks(gloo_plugin_path(), world(), test_options(), [&](RankSession& s) {
    for (int op = 0; op < CB_OP_COUNT_V1; ++op) {
      if (op == CB_OP_BARRIER || op == CB_OP_SEND || op == CB_OP_RECV) continue;
      const Status status = s.run(make_args(static_cast<cb_op>(op), nullptr, nullptr, 0, CB_DTYPE_F32));
      if (!status.ok()) throw std::runtime_error("count 0 failed: " + status.message);
    }
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

// Buffers that overlap in ways gloo cannot handle itself must still give exact results.
TEST_P(GlooCollectives, OverlappingInputAndOutputAreHandled) {
  constexpr size_t kCount = 100;
  const auto failures = run_ranks(gloo_plugin_path(), world(), test_options(), [&](RankSession& s) {
    RankChecks checks(s.rank());
    const int rank = s.rank(), n = s.world_size(), root = n - 1;
    const size_t bytes = kCount;  // uint8
    // allgather with sendbuf == recvbuf (not the in-place layout unless rank 0)
    {
      std::vector<std::byte> buf(bytes * n);
      fill_movement(buf.data(), bytes, rank, 0);
      checks.expect(s.run(make_args(CB_OP_ALLGATHER, buf.data(), buf.data(), kCount, CB_DTYPE_UINT8)).ok(), "allgather aliased");
      for (int origin = 0; origin < n; ++origin)
        checks.expect(first_movement_mismatch(buf.data() + bytes * origin, bytes, origin, 0) == bytes,
                      "allgather aliased: block " + std::to_string(origin));
    }
    // gather at the last rank with sendbuf == recvbuf
    {
      std::vector<std::byte> buf(bytes * n);
      fill_movement(buf.data(), bytes, rank, 0);
      checks.expect(s.run(make_args(CB_OP_GATHER, buf.data(), buf.data(), kCount, CB_DTYPE_UINT8, CB_REDOP_SUM, root)).ok(), "gather aliased");
      if (rank == root)
        for (int origin = 0; origin < n; ++origin)
          checks.expect(first_movement_mismatch(buf.data() + bytes * origin, bytes, origin, 0) == bytes,
                        "gather aliased: block " + std::to_string(origin));
    }
    // scatter from the last rank with recvbuf == sendbuf
    {
      std::vector<std::byte> buf(bytes * n);
      if (rank == root)
        for (int peer = 0; peer < n; ++peer) fill_movement(buf.data() + bytes * peer, bytes, root, peer);
      checks.expect(s.run(make_args(CB_OP_SCATTER, buf.data(), buf.data(), kCount, CB_DTYPE_UINT8, CB_REDOP_SUM, root)).ok(), "scatter aliased");
      checks.expect(first_movement_mismatch(buf.data(), bytes, root, rank) == bytes, "scatter aliased: recvbuf");
    }
    // allreduce whose output starts half-way into its input
    {
      std::vector<std::byte> buf(bytes + bytes / 2);
      fill_reduction_input(CB_DTYPE_UINT8, buf.data(), kCount, rank);
      std::byte* out = buf.data() + bytes / 2;
      checks.expect(s.run(make_args(CB_OP_ALLREDUCE, buf.data(), out, kCount, CB_DTYPE_UINT8, CB_REDOP_SUM)).ok(), "allreduce overlapping");
      for (size_t i = 0; i < kCount; ++i)
        if (static_cast<uint8_t>(out[i]) != expected_reduction(CB_REDOP_SUM, n, i)) {
          checks.expect(false, "allreduce overlapping: element " + std::to_string(i));
          break;
        }
    }
    checks.finish();
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(GlooCollectives, TwoCommunicatorsOfOneBackendStayApart) {
  const auto failures = run_ranks(gloo_plugin_path(), world(), test_options(), [&](RankSession& s) {
    cb_comm* second = nullptr;
    Status status = to_status(s.api(), s.api().comm_create(s.backend(), 30000, &second));
    if (!status.ok()) throw std::runtime_error("second comm_create: " + status.message);
    RankChecks checks(s.rank());
    for (int round = 0; round < 4; ++round) {
      int32_t a = s.rank() + 1, b = 10 * (s.rank() + 1);
      cb_request* request = nullptr;
      auto args_a = make_args(CB_OP_ALLREDUCE, &a, &a, 1, CB_DTYPE_INT32);
      auto args_b = make_args(CB_OP_ALLREDUCE, &b, &b, 1, CB_DTYPE_INT32);
      checks.expect(to_status(s.api(), s.api().post(second, &args_b, &request)).ok(), "post on second comm");
      if (request != nullptr) s.free(request);
      checks.expect(s.run(args_a).ok(), "post on first comm");
      const int32_t n = s.world_size();
      checks.expect(a == n * (n + 1) / 2, "first comm sum = " + std::to_string(a));
      checks.expect(b == 10 * n * (n + 1) / 2, "second comm sum = " + std::to_string(b));
    }
    status = to_status(s.api(), s.api().comm_destroy(second));
    checks.expect(status.ok(), "destroy second comm: " + status.message);
    checks.finish();
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooCollectives, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

}  // namespace
}  // namespace commbench::test
