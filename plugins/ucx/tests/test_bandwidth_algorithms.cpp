// The bandwidth algorithms (issue 25): the pipelined ring, Rabenseifner's allreduce and the
// recursive-halving reduce-scatter, over every dtype x reduce op x placement at 2..7 ranks with
// odd counts, the ring both unsegmented and in segments of a few elements; and that the ring is
// a pipeline indeed: a segment is passed on before the rest of its block has arrived.
#include <gtest/gtest.h>

#include <algorithm>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "collective_runner.h"
#include "collectives/collectives.h"
#include "commbench/sdk/dtypes.hpp"
#include "memory_channel.h"

namespace commbench::ucx_backend {
namespace {

using test::Case;
using test::MemoryChannel;
using test::MemoryFabric;
using test::run_and_check;

struct Forced {
  cb_op op;
  Algorithm algorithm;
};
constexpr Forced kBandwidthAlgorithms[] = {
    {CB_OP_ALLREDUCE, Algorithm::kRing},           {CB_OP_ALLREDUCE, Algorithm::kRabenseifner},
    {CB_OP_REDUCESCATTER, Algorithm::kRing},       {CB_OP_REDUCESCATTER, Algorithm::kRecursiveHalving},
    {CB_OP_ALLGATHER, Algorithm::kRing},
};

TEST(BandwidthAlgorithms, EveryDtypeRedopAndPlacementAtTwoToSevenRanks) {
  for (const Forced& f : kBandwidthAlgorithms)
    for (int world = 2; world <= 7; ++world)
      for (int d = 0; d < CB_DTYPE_COUNT_V1; ++d)
        for (int o = 0; o < (sdk::is_reduction(f.op) ? CB_REDOP_COUNT_V1 : 1); ++o)
          for (bool in_place : {false, true})
            // 5: fewer elements than ranks from 6 on (empty blocks and segments); 37: prime.
            for (size_t count : {size_t{5}, size_t{37}})
              // The ring in segments of 6 bytes (1 to 6 elements, up to 37 a block); unsegmented it
              // runs in Reductions.EveryDtypeAndRedopForEveryReductionAlgorithm.
              for (size_t segment : {size_t{6}}) {
                Case c{f.op, f.algorithm, world, count, in_place};
                c.dtype = static_cast<cb_dtype>(d);
                c.redop = static_cast<cb_redop>(o);
                c.segment_bytes = segment;
                run_and_check(c);
                if (::testing::Test::HasFailure()) return;  // one clear failure, not thousands
              }
}

TEST(BandwidthAlgorithms, LargerCountsInManySegments) {
  // Thousands of elements in up to 64 segments per block: many pipeline windows per round.
  for (const Forced& f : kBandwidthAlgorithms)
    for (int world : {2, 3, 4, 5, 7})
      for (size_t count : {size_t{10007}, size_t{65536 + 3}})
        for (bool in_place : {false, true}) {
          Case c{f.op, f.algorithm, world, count, in_place};
          c.segment_bytes = 1000;
          run_and_check(c);
          if (::testing::Test::HasFailure()) return;
        }
}

// Sends that complete only once their receiver has taken them, as UCX's rendezvous makes every
// large message: an algorithm whose ranks can all wait on sends nobody receives deadlocks here
// (CB_ERR_TIMEOUT), where buffered sends let it finish.
TEST(BandwidthAlgorithms, EveryBandwidthAlgorithmCompletesWhenSendsWaitForTheirReceiver) {
  for (const Forced& f : kBandwidthAlgorithms)
    for (int world : {2, 3, 4, 5, 7})
      for (size_t segment : {size_t{0}, size_t{1000}})
        // 10007: about 10 segments per block; 65539: 64, the most the ring cuts (the runs that
        // hung over UCX had 16 and 64).
        for (size_t count : {size_t{10007}, size_t{65539}})
          for (bool in_place : {false, true}) {
            Case c{f.op, f.algorithm, world, count, in_place};
            c.segment_bytes = segment;
            c.rendezvous = true;
            run_and_check(c);
            if (::testing::Test::HasFailure()) return;
          }
}

// Wraps a rank's channel and logs, in order, each send posted ("s<step>") and each receive
// completed ("r<step>").
class Recorder final : public Channel {
 public:
  explicit Recorder(MemoryChannel& inner) : inner_(inner) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Ticket post_send(int peer, uint32_t step, const void* buf, size_t bytes) override {
    log.push_back("s" + std::to_string(step));
    return track(inner_.post_send(peer, step, buf, bytes), -1);
  }
  Ticket post_recv(int peer, uint32_t step, void* buf, size_t bytes) override {
    return track(inner_.post_recv(peer, step, buf, bytes), static_cast<int>(step));
  }
  void wait(Ticket t) override {
    inner_.wait(t);
    completed(t);
  }
  void wait_all() override {
    inner_.wait_all();
    for (Ticket t = 0; t < recv_steps_.size(); ++t) completed(t);
    recv_steps_.clear();
  }
  std::vector<std::string> log;

 private:
  Ticket track(Ticket t, int recv_step) {
    recv_steps_.resize(std::max(recv_steps_.size(), t + 1), -1);
    recv_steps_[t] = recv_step;
    return t;
  }
  void completed(Ticket t) {
    if (t < recv_steps_.size() && recv_steps_[t] >= 0) {
      log.push_back("r" + std::to_string(recv_steps_[t]));
      recv_steps_[t] = -1;
    }
  }
  MemoryChannel& inner_;
  std::vector<int> recv_steps_;  // by ticket; -1: a send, or already logged
};

TEST(BandwidthAlgorithms, TheRingPassesASegmentOnBeforeItsBlockHasArrived) {
  // 3 ranks, blocks of 64 f32 in segments of 16 (64 bytes): S = 4, events t = round * 4 + segment,
  // the allgather's from 8 on.
  constexpr int kWorld = 3;
  const size_t count = 3 * 64;
  MemoryFabric fabric(kWorld);
  std::vector<std::vector<std::string>> logs(kWorld);
  std::vector<size_t> messages(kWorld);
  std::vector<std::string> errors(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r)
    threads.emplace_back([&, r] {
      try {
        MemoryChannel ch(fabric, r);
        Recorder rec(ch);
        Scratch s;
        std::vector<float> send(count, 1.0f), recv(count);
        AlgorithmChoice choice;
        choice.allreduce = Algorithm::kRing;
        choice.segment_bytes = 64;
        ch.begin();
        run_collective(rec, CB_OP_ALLREDUCE, CollectiveArgs{send.data(), recv.data(), count}, choice, s);
        ch.end();
        logs[r] = rec.log;
        messages[r] = ch.messages_sent();
        if (std::any_of(recv.begin(), recv.end(), [](float x) { return x != kWorld; })) errors[r] = "wrong result";
      } catch (const std::exception& e) {
        errors[r] = e.what();
        fabric.abort();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < kWorld; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    EXPECT_EQ(errors[r], "");
    EXPECT_EQ(messages[r], 2u * (kWorld - 1) * 4) << "2(n-1) rounds of 4 segments";
    const auto& log = logs[r];
    auto at = [&](const std::string& e) { return std::find(log.begin(), log.end(), e) - log.begin(); };
    ASSERT_LT(at("r3"), static_cast<ptrdiff_t>(log.size()));
    // Round 1's first segment leaves before round 0's last one is in; the allgather's first
    // segment leaves before the reduce-scatter's last one is in.
    EXPECT_LT(at("s4"), at("r3"));
    EXPECT_LT(at("s8"), at("r7"));
    EXPECT_LT(at("s12"), at("r11"));
  }
}

}  // namespace
}  // namespace commbench::ucx_backend
