// The in-memory channel catches what would break an algorithm over UCX (memory_channel.h).
// Single-threaded where possible: a send is delivered by its sender's wait_all(), so rank 0
// can finish a round before rank 1 starts its own.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "memory_channel.h"
#include "test_util.h"

namespace commbench::ucx_backend {
namespace {

using test::code_of;
using test::MemoryChannel;
using test::MemoryFabric;

TEST(MemoryChannel, ReceiveOfAnotherSizeFails) {
  MemoryFabric fabric(2);
  MemoryChannel a(fabric, 0), b(fabric, 1);
  a.begin();
  b.begin();
  char data[8] = {}, sink[8];
  a.post_send(1, 0, data, 8);
  a.wait_all();
  b.post_recv(0, 0, sink, 4);
  EXPECT_EQ(code_of([&] { b.wait_all(); }), CB_ERR_INTERNAL);
}

TEST(MemoryChannel, AnUnreceivedMessageIsALeftover) {
  MemoryFabric fabric(2);
  MemoryChannel a(fabric, 0), b(fabric, 1);
  a.begin();
  b.begin();
  char data[8] = {}, sink[8];
  a.post_send(1, 0, data, 8);
  a.post_send(1, 1, data, 8);  // the extra one
  a.wait_all();
  b.post_recv(0, 0, sink, 8);
  b.wait_all();
  ASSERT_EQ(fabric.leftovers().size(), 1u);
  EXPECT_EQ(fabric.leftovers().front(), "0 -> 1, collective 1, step 1, 8 bytes");
}

TEST(MemoryChannel, AMissingMessageTimesOutAndStepsKeepTwelveBits) {
  MemoryFabric fabric(2);
  MemoryChannel a(fabric, 0), b(fabric, 1, std::chrono::milliseconds(50));
  a.begin();
  b.begin();
  char data[1] = {}, sink[1];
  a.post_send(1, 4096 + 7, data, 1);  // step 7 on the wire, as with UCX tags
  a.wait_all();
  b.post_recv(0, 7, sink, 1);
  EXPECT_NO_THROW(b.wait_all());
  b.post_recv(0, 8, sink, 1);
  EXPECT_EQ(code_of([&] { b.wait_all(); }), CB_ERR_TIMEOUT);
}

TEST(MemoryChannel, ASendBufferChangedBeforeWaitAllFails) {
  MemoryFabric fabric(2);
  MemoryChannel a(fabric, 0);
  a.begin();
  char data[4] = {1, 2, 3, 4};
  a.post_send(1, 0, data, 4);
  data[2] = 9;
  EXPECT_EQ(code_of([&] { a.wait_all(); }), CB_ERR_INTERNAL);
}

TEST(MemoryChannel, AReceiveOverlappingATransferInFlightFails) {
  MemoryFabric fabric(3);
  MemoryChannel a(fabric, 0);
  a.begin();
  char buf[16] = {};
  a.post_send(1, 0, buf, 8);
  std::string message;
  EXPECT_EQ(code_of([&] { a.post_recv(2, 0, buf + 4, 8); }, &message), CB_ERR_INTERNAL);
  EXPECT_NE(message.find("overlaps"), std::string::npos) << message;
}

TEST(MemoryChannel, ABufferIsFreeOnceItsTransferCompleted) {
  // Rank 0 sends from buf, waits for that send alone, then receives into buf (what a pipeline
  // does with a slot) while another send is still in flight.
  MemoryFabric fabric(2);
  MemoryChannel a(fabric, 0), b(fabric, 1);
  a.begin();
  b.begin();
  char buf[4] = {1, 2, 3, 4}, other[4] = {5, 6, 7, 8}, sink[4] = {}, reply[4] = {9, 9, 9, 9};
  const auto first = a.post_send(1, 0, buf, 4);
  a.post_send(1, 1, other, 4);
  a.wait(first);
  buf[0] = 42;  // allowed: that send completed
  EXPECT_EQ(code_of([&] { a.post_recv(1, 2, buf, 4); }), CB_OK);
  b.post_recv(0, 0, sink, 4);
  b.post_send(0, 2, reply, 4);
  b.wait_all();
  EXPECT_EQ(sink[0], 1);  // the data at post time
  EXPECT_EQ(code_of([&] { a.wait_all(); }), CB_OK);
  EXPECT_EQ(buf[0], 9);
  EXPECT_EQ(a.most_in_flight(), 2u);
  b.post_recv(0, 1, sink, 4);
  b.wait_all();
  EXPECT_EQ(sink[0], 5);
}

TEST(MemoryChannel, AReceiveBufferWrittenBeforeTheReceiveCompletedFails) {
  MemoryFabric fabric(2);
  MemoryChannel a(fabric, 0), b(fabric, 1);
  a.begin();
  b.begin();
  char data[4] = {1, 2, 3, 4}, sink[4] = {};
  a.post_send(1, 0, data, 4);
  a.wait_all();
  const auto t = b.post_recv(0, 0, sink, 4);
  sink[1] = 7;  // the algorithm used the buffer UCX may be filling
  std::string message;
  EXPECT_EQ(code_of([&] { b.wait(t); }, &message), CB_ERR_INTERNAL);
  EXPECT_NE(message.find("written before the receive completed"), std::string::npos) << message;
}

TEST(MemoryChannel, TwoTransfersInFlightWithOneStepFail) {
  MemoryFabric fabric(2);
  MemoryChannel a(fabric, 0);
  a.begin();
  char x[1] = {}, y[1] = {};
  const auto t = a.post_send(1, 4096 + 3, x, 1);
  std::string message;
  EXPECT_EQ(code_of([&] { a.post_send(1, 3, y, 1); }, &message), CB_ERR_INTERNAL);  // 12 bits: the same step
  EXPECT_NE(message.find("same step"), std::string::npos) << message;
  a.wait(t);
  EXPECT_EQ(code_of([&] { a.post_send(1, 3, y, 1); }), CB_OK);  // the first one is done
}

TEST(MemoryChannel, PostedButNeverWaitedForFailsAtTheEnd) {
  MemoryFabric fabric(2);
  MemoryChannel a(fabric, 0);
  a.begin();
  char data[1] = {};
  a.post_send(1, 0, data, 1);
  EXPECT_EQ(code_of([&] { a.end(); }), CB_ERR_INTERNAL);
}

TEST(MemoryChannel, AbortWakesAWaitingRank) {
  MemoryFabric fabric(2);
  MemoryChannel b(fabric, 1);  // the default 10 s timeout: abort must not wait for it
  b.begin();
  char sink[1];
  b.post_recv(0, 0, sink, 1);
  const auto start = std::chrono::steady_clock::now();
  std::thread aborter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    fabric.abort();
  });
  EXPECT_EQ(code_of([&] { b.wait_all(); }), CB_ERR_REMOTE);
  aborter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}
// Both ranks wait for their own send before posting the receive that would take the other's:
// buffered sends let that finish, rendezvous sends (UCX's for large messages) deadlock, and the
// rendezvous fabric says so with CB_ERR_TIMEOUT instead of hanging.
TEST(MemoryChannel, WaitingForASendBeforePostingTheReceiveDeadlocksOnlyUnderRendezvous) {
  for (const bool rendezvous : {false, true}) {
    MemoryFabric fabric(2, rendezvous);
    cb_status codes[2] = {CB_OK, CB_OK};
    std::vector<std::thread> ranks;
    for (int r = 0; r < 2; ++r)
      ranks.emplace_back([&, r] {
        MemoryChannel ch(fabric, r, std::chrono::milliseconds(300));
        ch.begin();
        char out[8] = {}, in[8];
        codes[r] = code_of([&] {
          ch.wait(ch.post_send(1 - r, 0, out, 8));
          ch.post_recv(1 - r, 0, in, 8);
          ch.wait_all();
        });
      });
    for (auto& t : ranks) t.join();
    for (int r = 0; r < 2; ++r)
      EXPECT_EQ(codes[r], rendezvous ? CB_ERR_TIMEOUT : CB_OK) << "rank " << r << (rendezvous ? " rendezvous" : " buffered");
  }
}

// A rank waiting for one transfer still lands its other posted receives, as UCX's progress
// does: here rank 1 waits for its send to rank 0 while rank 0 only receives after its own
// message to rank 1 was taken, which needs rank 1 to progress a receive it is not waiting for.
TEST(MemoryChannel, UnderRendezvousAWaitProgressesEveryPostedReceive) {
  MemoryFabric fabric(2, true);
  std::string errors[2];
  char got0 = 0, got1 = 0;
  std::thread rank1([&] {
    try {
      MemoryChannel ch(fabric, 1, std::chrono::milliseconds(2000));
      ch.begin();
      char out = 'b';
      ch.post_recv(0, 0, &got1, 1);
      ch.wait(ch.post_send(0, 1, &out, 1));
      ch.wait_all();
    } catch (const std::exception& e) {
      errors[1] = e.what();
    }
  });
  try {
    MemoryChannel ch(fabric, 0, std::chrono::milliseconds(2000));
    ch.begin();
    char out = 'a';
    ch.wait(ch.post_send(1, 0, &out, 1));
    ch.post_recv(1, 1, &got0, 1);
    ch.wait_all();
  } catch (const std::exception& e) {
    errors[0] = e.what();
  }
  rank1.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_EQ(got0, 'b');
  EXPECT_EQ(got1, 'a');
}

}  // namespace
}  // namespace commbench::ucx_backend
