// send/recv: ring exchange of every dtype, tag matching, non-blocking test(), timeouts.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "commbench/sdk/dtypes.hpp"
#include "patterns.h"
#include "test_support.h"

namespace commbench::test {
namespace {

cb_op_args p2p_args(cb_op op, const void* sendbuf, void* recvbuf, size_t count, cb_dtype dtype,
                    int peer, uint32_t tag = 0) {
  cb_op_args args = make_args(op, sendbuf, recvbuf, count, dtype);
  args.peer = peer;
  args.tag = tag;
  return args;
}

class GlooSendRecv : public ::testing::TestWithParam<int> {
 protected:
  int world() const { return GetParam(); }
};

// Every rank sends to its right neighbour and receives from its left one, posting the send
// first: this only works if send() returns before the matching recv is posted.
TEST_P(GlooSendRecv, RingExchangeOfEveryDtype) {
  const auto failures = run_ranks(gloo_plugin_path(), world(), test_options(), [&](RankSession& s) {
    RankChecks checks(s.rank());
    const int right = (s.rank() + 1) % s.world_size();
    const int left = (s.rank() + s.world_size() - 1) % s.world_size();
    for (cb_dtype dtype : all_dtypes())
      for (size_t count : test_counts()) {
        const size_t bytes = count * sdk::dtype_size(dtype);
        std::vector<std::byte> send(bytes), recv(bytes, std::byte{kSentinel});
        fill_movement(send.data(), bytes, s.rank(), dtype);
        cb_request* sent = nullptr;
        cb_request* received = nullptr;
        const std::string what = std::string(sdk::dtype_name(dtype)) + " count " + std::to_string(count);
        checks.expect(s.post(p2p_args(CB_OP_SEND, send.data(), nullptr, count, dtype, right), &sent).ok(), what + ": post send");
        checks.expect(s.post(p2p_args(CB_OP_RECV, nullptr, recv.data(), count, dtype, left), &received).ok(), what + ": post recv");
        if (sent != nullptr) checks.expect(s.wait(sent).ok(), what + ": wait send");
        if (received != nullptr) checks.expect(s.wait(received).ok(), what + ": wait recv");
        s.free(sent);
        s.free(received);
        checks.expect(first_movement_mismatch(recv.data(), bytes, left, dtype) == bytes, what + ": received data");
      }
    checks.finish();
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

// First and last rank ping-pong; the ranks in between have nothing to do.
TEST_P(GlooSendRecv, PingPongBetweenFirstAndLastRank) {
  const auto failures = run_ranks(gloo_plugin_path(), world(), test_options(), [&](RankSession& s) {
    const int last = s.world_size() - 1;
    if (s.rank() != 0 && s.rank() != last) return;
    const int peer = s.rank() == 0 ? last : 0;
    RankChecks checks(s.rank());
    std::vector<int64_t> buffer(1000);
    for (int64_t round = 0; round < 20; ++round) {
      const bool my_turn_to_send = (round % 2 == 0) == (s.rank() == 0);
      if (my_turn_to_send) {
        for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = round * 1000 + static_cast<int64_t>(i);
        checks.expect(s.run(p2p_args(CB_OP_SEND, buffer.data(), nullptr, buffer.size(), CB_DTYPE_INT64, peer)).ok(), "send");
      } else {
        std::fill(buffer.begin(), buffer.end(), -1);
        checks.expect(s.run(p2p_args(CB_OP_RECV, nullptr, buffer.data(), buffer.size(), CB_DTYPE_INT64, peer)).ok(), "recv");
        checks.expect(buffer.front() == round * 1000 && buffer.back() == round * 1000 + 999,
                      "round " + std::to_string(round) + " payload");
      }
    }
    checks.finish();
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, GlooSendRecv, ::testing::Values(2, 3, 4),
                         [](const auto& info) { return "world" + std::to_string(info.param); });

// Messages with different tags match by tag, not by posting order.
TEST(GlooSendRecvTags, ReceivesMatchByTag) {
  const auto failures = run_ranks(gloo_plugin_path(), 2, test_options(), [&](RankSession& s) {
    int32_t first = 0, second = 0;
    cb_request* a = nullptr;
    cb_request* b = nullptr;
    if (s.rank() == 0) {
      int32_t one = 111, two = 222;
      s.post(p2p_args(CB_OP_SEND, &one, nullptr, 1, CB_DTYPE_INT32, 1, /*tag=*/1), &a);
      s.post(p2p_args(CB_OP_SEND, &two, nullptr, 1, CB_DTYPE_INT32, 1, /*tag=*/2), &b);
      if (!s.wait(a).ok() || !s.wait(b).ok()) throw std::runtime_error("send failed");
    } else {
      s.post(p2p_args(CB_OP_RECV, nullptr, &second, 1, CB_DTYPE_INT32, 0, /*tag=*/2), &b);
      s.post(p2p_args(CB_OP_RECV, nullptr, &first, 1, CB_DTYPE_INT32, 0, /*tag=*/1), &a);
      if (!s.wait(b).ok() || !s.wait(a).ok()) throw std::runtime_error("recv failed");
      if (first != 111 || second != 222)
        throw std::runtime_error("tag 1 got " + std::to_string(first) + ", tag 2 got " + std::to_string(second));
    }
    s.free(a);
    s.free(b);
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

// test() must report "not done" while the peer has not sent, then "done" without wait().
TEST(GlooSendRecvTest, TestPollsWithoutBlocking) {
  std::atomic<bool> send_posted{false};
  const auto failures = run_ranks(gloo_plugin_path(), 2, test_options(), [&](RankSession& s) {
    double value = 0;
    cb_request* request = nullptr;
    if (s.rank() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      value = 42;
      send_posted = true;
      s.post(p2p_args(CB_OP_SEND, &value, nullptr, 1, CB_DTYPE_F64, 1), &request);
      while (true) {
        bool done = false;
        if (!s.test(request, &done).ok()) throw std::runtime_error("test(send) failed");
        if (done) break;
        std::this_thread::yield();
      }
    } else {
      s.post(p2p_args(CB_OP_RECV, nullptr, &value, 1, CB_DTYPE_F64, 0), &request);
      int polls_before_send = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (true) {
        const bool sent_before = send_posted.load();
        bool done = false;
        const Status status = s.test(request, &done);
        if (!status.ok()) throw std::runtime_error("test(recv) failed: " + status.message);
        if (done) {
          if (!sent_before && !send_posted.load()) throw std::runtime_error("recv done before the send was posted");
          break;
        }
        if (!sent_before) ++polls_before_send;
        if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("recv never completed");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (polls_before_send == 0) throw std::runtime_error("test() never returned 'not done' while waiting");
      if (value != 42) throw std::runtime_error("received " + std::to_string(value));
      if (!s.wait(request).ok()) throw std::runtime_error("wait after test failed");
    }
    s.free(request);
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST(GlooSendRecvErrors, WaitForAMessageNeverSentTimesOut) {
  std::atomic<bool> waited{false};
  const auto failures = run_ranks(gloo_plugin_path(), 2, test_options(), [&](RankSession& s) {
    if (s.rank() == 0) {
      // Stay connected (a closed connection would be reported instead of the timeout).
      while (!waited) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    int32_t value = 0;
    cb_request* request = nullptr;
    const Status posted = s.post(p2p_args(CB_OP_RECV, nullptr, &value, 1, CB_DTYPE_INT32, 0, 7), &request);
    const Status status = posted.ok() ? s.wait(request, 200) : posted;
    waited = true;
    s.free(request);
    if (status.code != CB_ERR_TIMEOUT) throw std::runtime_error("expected TIMEOUT, got: " + status.message);
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

// comm_abort closes this rank's connections, so a peer blocked on it fails at once instead of
// waiting for its timeout.
TEST(GlooSendRecvErrors, AbortFailsABlockedPeerQuickly) {
  const auto failures = run_ranks(gloo_plugin_path(), 2, test_options(), [&](RankSession& s) {
    if (s.rank() == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const Status status = s.abort_comm();
      if (!status.ok()) throw std::runtime_error("comm_abort failed: " + status.message);
      return;
    }
    int32_t value = 0;
    cb_request* request = nullptr;
    const auto start = std::chrono::steady_clock::now();
    const Status posted = s.post(p2p_args(CB_OP_RECV, nullptr, &value, 1, CB_DTYPE_INT32, 1), &request);
    const Status status = posted.ok() ? s.wait(request) : posted;
    s.free(request);
    const auto waited = std::chrono::steady_clock::now() - start;
    if (status.code != CB_ERR_REMOTE) throw std::runtime_error("expected REMOTE, got: " + status.message);
    if (waited > std::chrono::seconds(5)) throw std::runtime_error("the failure took longer than 5 s to surface");
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

// A transfer handed to the progress thread by test() must not keep comm_destroy waiting.
TEST(GlooSendRecvErrors, DestroyWithATestedTransferPendingReturnsPromptly) {
  std::atomic<bool> done{false};
  const auto failures = run_ranks(gloo_plugin_path(), 2, test_options(), [&](RankSession& s) {
    if (s.rank() == 0) {
      while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      return;
    }
    int32_t value = 0;
    cb_request* request = nullptr;
    if (!s.post(p2p_args(CB_OP_RECV, nullptr, &value, 1, CB_DTYPE_INT32, 0, 3), &request).ok())
      throw std::runtime_error("post failed");
    bool finished = true;
    s.test(request, &finished);
    if (finished) throw std::runtime_error("a recv nobody sent to reported done");
    const auto start = std::chrono::steady_clock::now();
    const Status destroyed = s.destroy_comm();
    const auto took = std::chrono::steady_clock::now() - start;
    const Status waited = s.wait(request, 1000);
    s.free(request);
    done = true;
    if (!destroyed.ok()) throw std::runtime_error("comm_destroy failed: " + destroyed.message);
    if (took > std::chrono::seconds(5)) throw std::runtime_error("comm_destroy blocked on the pending transfer");
    if (waited.code != CB_ERR_REMOTE) throw std::runtime_error("expected REMOTE after destroy, got: " + waited.message);
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

// A peer outside the world is a caller's error; the rank itself is a valid peer that gloo does not
// implement (docs/plugin-abi.md §4, "Self send/recv"), so the core can record "unsupported".
TEST(GlooSendRecvErrors, PeerMustBeAnotherRank) {
  const auto failures = run_ranks(gloo_plugin_path(), 2, test_options(), [&](RankSession& s) {
    int32_t value = 0;
    for (int peer : {-1, 2}) {
      const Status status = s.run(p2p_args(CB_OP_SEND, &value, nullptr, 1, CB_DTYPE_INT32, peer));
      if (status.code != CB_ERR_INVALID_ARGUMENT)
        throw std::runtime_error("peer " + std::to_string(peer) + ": expected INVALID_ARGUMENT, got: " + status.message);
    }
    for (cb_op op : {CB_OP_SEND, CB_OP_RECV}) {
      const Status status = op == CB_OP_SEND
                                ? s.run(p2p_args(op, &value, nullptr, 1, CB_DTYPE_INT32, s.rank()))
                                : s.run(p2p_args(op, nullptr, &value, 1, CB_DTYPE_INT32, s.rank()));
      if (status.code != CB_ERR_UNIMPLEMENTED)
        throw std::runtime_error("self peer: expected UNIMPLEMENTED, got: " + status.message);
    }
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

}  // namespace
}  // namespace commbench::test
