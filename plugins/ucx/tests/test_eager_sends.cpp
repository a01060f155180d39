// Which allreduce sends ask UCX for fast completion (collectives/eager_sends.h): the rule alone,
// then the rule applied to the sends the algorithms really post, over the in-memory channel.
// That the UCX channel then passes the flag to UCX is not tested here: UCX's release builds say
// nowhere whether a message went eagerly; the A/B in docs/performance-ucx-mpi.md shows it does.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/eager_sends.h"
#include "memory_channel.h"

namespace commbench::ucx_backend::test {
namespace {

TEST(EagerSends, OnlyAllreduceAsksAndNeverForItsOutOfPlaceInput) {
  std::vector<float> send(1024), recv(1024);
  CollectiveArgs out{send.data(), recv.data(), send.size(), CB_DTYPE_F32, CB_REDOP_SUM, 0};
  const EagerSends e = eager_sends_for(CB_OP_ALLREDUCE, out, 65536);
  EXPECT_FALSE(e.applies(send.data(), 4096)) << "the input's start";
  EXPECT_FALSE(e.applies(send.data() + 1023, 4)) << "the input's last element";
  EXPECT_TRUE(e.applies(send.data() + 1024, 4)) << "just past the input";
  EXPECT_TRUE(e.applies(recv.data(), 4096)) << "what the op wrote";
  EXPECT_TRUE(e.applies(recv.data(), 65536)) << "up to the limit";
  EXPECT_FALSE(e.applies(recv.data(), 65537)) << "above the limit";
  EXPECT_FALSE(e.applies(recv.data(), 0)) << "nothing to send";

  CollectiveArgs in = out;
  in.sendbuf = recv.data();
  EXPECT_TRUE(eager_sends_for(CB_OP_ALLREDUCE, in, 65536).applies(recv.data(), 4096))
      << "in place the buffer holds what the last op (or the caller) wrote";
  EXPECT_FALSE(eager_sends_for(CB_OP_ALLREDUCE, in, 0).applies(recv.data(), 4096)) << "0 turns it off";
  for (cb_op op : {CB_OP_REDUCESCATTER, CB_OP_ALLGATHER, CB_OP_BROADCAST, CB_OP_ALLTOALL})
    EXPECT_FALSE(eager_sends_for(op, in, 65536).applies(recv.data(), 4096)) << "op " << op;
}

// A channel that notes, for every send, whether the policy asks for fast completion.
class RecordingChannel final : public Channel {
 public:
  RecordingChannel(MemoryChannel& inner, const EagerSends& policy) : inner_(inner), policy_(policy) {}
  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  Ticket post_send(int peer, uint32_t step, const void* buf, size_t bytes) override {
    eager.push_back(policy_.applies(buf, bytes));
    return inner_.post_send(peer, step, buf, bytes);
  }
  Ticket post_recv(int peer, uint32_t step, void* buf, size_t bytes) override {
    return inner_.post_recv(peer, step, buf, bytes);
  }
  void wait(Ticket ticket) override { inner_.wait(ticket); }
  void wait_all() override { inner_.wait_all(); }
  std::vector<bool> eager;  // per send, in post order

 private:
  MemoryChannel& inner_;
  const EagerSends& policy_;
};

// Each rank's sends, in order, as the policy classifies them.
std::vector<std::vector<bool>> classify(Algorithm forced, int world, size_t count, bool in_place) {
  MemoryFabric fabric(world);
  std::vector<std::vector<bool>> out(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r)
    threads.emplace_back([&, r] {
      std::vector<float> send(count, 1.0f), recv(count, 1.0f);
      CollectiveArgs a{in_place ? recv.data() : send.data(), recv.data(), count, CB_DTYPE_F32, CB_REDOP_SUM, 0};
      const EagerSends policy = eager_sends_for(CB_OP_ALLREDUCE, a, 65536);
      MemoryChannel inner(fabric, r);
      RecordingChannel ch(inner, policy);
      AlgorithmChoice choice;
      choice.allreduce = forced;
      Scratch scratch;
      inner.begin();
      try {
        run_collective(ch, CB_OP_ALLREDUCE, a, choice, scratch);
        inner.end();
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << ": " << e.what();
        fabric.abort();
      }
      out[static_cast<size_t>(r)] = ch.eager;
    });
  for (auto& t : threads) t.join();
  return out;
}

TEST(EagerSends, TheAlgorithmsSendTheInputByRendezvousAndWhatTheyReducedEagerly) {
  const size_t count = 2048;  // 8 KiB
  // Two ranks, recursive doubling: one exchange of the whole buffer.
  for (const auto& sends : classify(Algorithm::kRecursiveDoubling, 2, count, false))
    EXPECT_EQ(sends, std::vector<bool>({false})) << "out of place the one send is the input";
  for (const auto& sends : classify(Algorithm::kRecursiveDoubling, 2, count, true))
    EXPECT_EQ(sends, std::vector<bool>({true})) << "in place it is the buffer the op writes";
  // Four ranks: round 0 sends the input, round 1 what round 0 reduced.
  for (const auto& sends : classify(Algorithm::kRecursiveDoubling, 4, count, false))
    EXPECT_EQ(sends, std::vector<bool>({false, true}));
  // Rabenseifner, two ranks: the reduce-scatter half sends input, the allgather half the result.
  for (const auto& sends : classify(Algorithm::kRabenseifner, 2, count, false))
    EXPECT_EQ(sends, std::vector<bool>({false, true}));
}

// Every algorithm on the worlds where it folds (3 ranks) or runs more rounds (4 ranks).
TEST(EagerSends, TheFoldAndTheRingSendOnlyTheirInputByRendezvous) {
  using Sends = std::vector<std::vector<bool>>;
  const size_t count = 2048;
  // Ring: round 0 of the reduce-scatter sends an input block, every later send a partial sum or
  // a finished block.
  EXPECT_EQ(classify(Algorithm::kRing, 3, count, false), Sends(3, {false, true, true, true}));
  EXPECT_EQ(classify(Algorithm::kRing, 3, count, true), Sends(3, {true, true, true, true}));
  // Recursive doubling on 3 ranks: rank 1 hands its input to rank 0 and sits out; rank 0 sends
  // the fold's sum, then the result back to rank 1; rank 2 sends its input once.
  EXPECT_EQ(classify(Algorithm::kRecursiveDoubling, 3, count, false), Sends({{true, true}, {false}, {false}}));
  EXPECT_EQ(classify(Algorithm::kRecursiveDoubling, 3, count, true), Sends({{true, true}, {true}, {true}}));
  // Rabenseifner: the first halving step sends input, the second a partial, the doubling results.
  EXPECT_EQ(classify(Algorithm::kRabenseifner, 4, count, false), Sends(4, {false, true, true, true}));
  EXPECT_EQ(classify(Algorithm::kRabenseifner, 3, count, false), Sends({{true, true, true}, {false}, {false, true}}));
  EXPECT_EQ(classify(Algorithm::kRabenseifner, 2, count, true), Sends(2, {true, true}));
}

}  // namespace
}  // namespace commbench::ucx_backend::test
