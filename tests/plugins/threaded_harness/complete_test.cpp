// The ABI's `complete` (1.1), through every SDK plugin built here: both plugins have their own
// request-free path (the core times every collective of theirs through it). Both must deliver
// the same data as post/wait and fail the same way (a timeout is a timeout, named after the op).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "test_support.h"

namespace commbench::test {
namespace {

std::vector<std::string> built_plugins() {
  std::vector<std::string> paths = {gloo_plugin_path()};
#ifdef COMMBENCH_UCX_PLUGIN_PATH
  paths.push_back(COMMBENCH_UCX_PLUGIN_PATH);
#endif
  return paths;
}

cb_op_args p2p(cb_op op, const void* sendbuf, void* recvbuf, size_t count, int peer, uint32_t tag = 0) {
  cb_op_args args = make_args(op, sendbuf, recvbuf, count, CB_DTYPE_INT64);
  args.peer = peer;
  args.tag = tag;
  return args;
}

class Complete : public ::testing::TestWithParam<std::string> {};

TEST_P(Complete, TheTableOffersIt) {
  EXPECT_NE(load_plugin(GetParam()).complete, nullptr);
  EXPECT_GE(load_plugin(GetParam()).struct_size, CB_STRUCT_SIZE(cb_backend_api, complete));
}

// Ranks 0 and 1 bounce a buffer whose content changes every round; every receive is checked.
TEST_P(Complete, PingPongDeliversEveryRound) {
  const auto failures = run_ranks(GetParam(), 2, test_options(), [&](RankSession& s) {
    RankChecks checks(s.rank());
    const int peer = 1 - s.rank();
    std::vector<int64_t> buffer(513);
    for (int64_t round = 0; round < 200; ++round) {
      const bool sends = (round % 2 == 0) == (s.rank() == 0);
      const std::string what = "round " + std::to_string(round);
      if (sends) {
        for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = round * 10000 + static_cast<int64_t>(i);
        checks.expect(s.complete(p2p(CB_OP_SEND, buffer.data(), nullptr, buffer.size(), peer)).ok(), what + " send");
      } else {
        std::fill(buffer.begin(), buffer.end(), -1);
        checks.expect(s.complete(p2p(CB_OP_RECV, nullptr, buffer.data(), buffer.size(), peer)).ok(), what + " recv");
        checks.expect(buffer.front() == round * 10000 && buffer.back() == round * 10000 + 512, what + " payload");
      }
    }
    checks.finish();
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

// A receive nobody sends: TIMEOUT after the timeout given, named after the op; then the core's
// next call, comm_abort (docs/plugin-abi.md section 4), succeeds.
TEST_P(Complete, AMessageNeverSentTimesOutNamingTheOp) {
  std::atomic<bool> timed_out{false};
  const auto failures = run_ranks(GetParam(), 2, test_options(), [&](RankSession& s) {
    if (s.rank() == 0) {
      // Stay connected (a closed connection would be reported instead of the timeout).
      while (!timed_out) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      s.abort_comm();  // as the core does on every rank once the run failed: no closing barrier
      return;
    }
    int64_t value = 0;
    const auto start = std::chrono::steady_clock::now();
    const Status status = s.complete(p2p(CB_OP_RECV, nullptr, &value, 1, 0, /*tag=*/3), 200);
    const auto waited = std::chrono::steady_clock::now() - start;
    timed_out = true;
    if (status.code != CB_ERR_TIMEOUT) throw std::runtime_error("expected TIMEOUT, got: " + status.message);
    if (status.message.find(" recv") == std::string::npos)
      throw std::runtime_error("the error does not name the op: " + status.message);
    if (waited < std::chrono::milliseconds(150) || waited > std::chrono::seconds(5))
      throw std::runtime_error("timed out after " +
                               std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(waited).count()) +
                               " ms; 200 were asked for");
    const Status aborted = s.abort_comm();
    if (!aborted.ok()) throw std::runtime_error("comm_abort after the timeout: " + aborted.message);
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

// Collectives through complete, as the core times them: every rank's result checked, in and out
// of place, at sizes either side of the algorithms' thresholds; a NULL buffer refused.
TEST_P(Complete, CollectivesDeliverTheReducedAndGatheredData) {
  const auto failures = run_ranks(GetParam(), 3, test_options(), [&](RankSession& s) {
    RankChecks checks(s.rank());
    const int n = 3, r = s.rank();
    for (size_t count : {size_t{1}, size_t{1000}, size_t{70000}}) {
      const std::string at = std::to_string(count) + " elements";
      std::vector<int64_t> in(count), out(count, -1);
      for (size_t i = 0; i < count; ++i) in[i] = (r + 1) * 1000003 + static_cast<int64_t>(i);
      auto expected_sum = [&](size_t i) { return int64_t{(1 + 2 + 3) * 1000003} + 3 * static_cast<int64_t>(i); };
      checks.expect(s.complete(make_args(CB_OP_ALLREDUCE, in.data(), out.data(), count, CB_DTYPE_INT64)).ok(), at + " allreduce");
      checks.expect(out.front() == expected_sum(0) && out.back() == expected_sum(count - 1), at + " allreduce result");
      std::vector<int64_t> inplace = in;
      checks.expect(s.complete(make_args(CB_OP_ALLREDUCE, inplace.data(), inplace.data(), count, CB_DTYPE_INT64)).ok(),
                    at + " allreduce in place");
      checks.expect(inplace == out, at + " allreduce in place result");
      std::vector<int64_t> gathered(count * n, -1);
      checks.expect(s.complete(make_args(CB_OP_ALLGATHER, in.data(), gathered.data(), count, CB_DTYPE_INT64)).ok(), at + " allgather");
      for (int k = 0; k < n; ++k)
        checks.expect(gathered[k * count] == (k + 1) * 1000003 && gathered[k * count + count - 1] == (k + 1) * 1000003 + static_cast<int64_t>(count - 1),
                      at + " allgather block " + std::to_string(k));
    }
    int64_t value = 1;
    const Status null_recv = s.complete(make_args(CB_OP_ALLREDUCE, &value, nullptr, 1, CB_DTYPE_INT64));
    checks.expect(null_recv.code == CB_ERR_INVALID_ARGUMENT, "NULL recvbuf: " + null_recv.message);
    checks.finish();
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST_P(Complete, BadArgumentsAreRefusedNotCrashed) {
  const auto failures = run_ranks(GetParam(), 2, test_options(), [&](RankSession& s) {
    int64_t value = 0;
    const Status bad_peer = s.complete(p2p(CB_OP_SEND, &value, nullptr, 1, 5));
    if (bad_peer.code != CB_ERR_INVALID_ARGUMENT) throw std::runtime_error("peer 5: " + bad_peer.message);
    const Status no_args = to_status(s.api(), s.api().complete(s.comm(), nullptr, 100));
    if (no_args.code != CB_ERR_INVALID_ARGUMENT) throw std::runtime_error("NULL args: " + no_args.message);
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

INSTANTIATE_TEST_SUITE_P(Plugins, Complete, ::testing::ValuesIn(built_plugins()),
                         [](const auto& info) {
                           return info.param.find("ucx") != std::string::npos ? std::string("ucx") : std::string("gloo");
                         });

}  // namespace
}  // namespace commbench::test
