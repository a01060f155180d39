// The clock estimates of ranks that share a host: they take the host leader's estimate and add
// their own timer's offset to the host clock. Ranks of one process (one timer, one host) make no
// round trip and come out with offset 0 to within a few ns; the derivation itself is checked
// with made-up clocks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/collectives.h"
#include "measure/clock_sync.h"
#include "test_store_helpers.h"

namespace commbench {
namespace {

using namespace test;

// Records the keys a rank sets and reads, to show which requests it made.
class KeyRecordingClient : public StoreClient {
 public:
  KeyRecordingClient(std::unique_ptr<StoreClient> inner, std::mutex& mutex, std::vector<std::string>& keys)
      : inner_(std::move(inner)), mutex_(mutex), keys_(keys) {}
  void set(const std::string& key, const Bytes& value) override { note(key), inner_->set(key, value); }
  Bytes get(const std::string& key, Millis timeout) override { return note(key), inner_->get(key, timeout); }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Millis timeout) override {
    return inner_->multi_get(keys, timeout);
  }
  void multi_get_each(const std::vector<std::string>& keys, Millis timeout, const ValueSink& sink) override {
    inner_->multi_get_each(keys, timeout, sink);
  }
  int64_t add(const std::string& key, int64_t delta) override { return inner_->add(key, delta); }
  bool check(const std::string& key) override { return inner_->check(key); }
  size_t delete_prefix(const std::string& prefix) override { return inner_->delete_prefix(prefix); }
  std::string local_address() const override { return inner_->local_address(); }

 private:
  void note(const std::string& key) {
    std::lock_guard lock(mutex_);
    keys_.push_back(key);
  }
  std::unique_ptr<StoreClient> inner_;
  std::mutex& mutex_;
  std::vector<std::string>& keys_;
};

// 80 ranks is past the 64 measuring leaders where rounds drop to 3: with one host there are
// none, so the rounds stay at 8.
class ClockSyncOneHost : public ::testing::TestWithParam<int> {};

TEST_P(ClockSyncOneHost, RanksOnRankZerosHostTakeItsClockWithoutARoundTrip) {
  const int kWorld = GetParam();
  auto server = start_server();
  std::vector<ClockOffsets> got(kWorld);
  std::vector<std::string> errors(kWorld);
  std::mutex mutex;
  std::vector<std::string> keys;
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r)
    threads.emplace_back([&, r] {
      try {
        KeyRecordingClient client(connect_to(*server), mutex, keys);
        Bootstrap bootstrap(client, "exec0", r, kWorld);
        got[static_cast<size_t>(r)] = estimate_clock_offsets(bootstrap, "start", Millis(20000));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (const std::string& key : keys) EXPECT_EQ(key.find("/clock/"), std::string::npos) << "a round trip: " << key;
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    EXPECT_EQ(got[static_cast<size_t>(r)].rounds, 8) << "rank " << r << ": rounds follow the hosts, not the ranks";
    const auto& all = got[static_cast<size_t>(r)].ranks;
    ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
    for (int peer = 0; peer < kWorld; ++peer) {
      const ClockEstimate& e = all[static_cast<size_t>(peer)];
      EXPECT_EQ(e.rank, peer);
      // One process, one timer: the offset is 0 up to the paired reads' rounding.
      EXPECT_LE(std::llabs(e.offset_ns), e.rtt_ns / 2 + 2) << "rank " << peer << " seen by " << r;
      EXPECT_EQ(e.at_ns + e.offset_ns, all[0].at_ns) << "rank " << peer << ": rank 0's moment";
      if (peer == 0) EXPECT_EQ(e.rtt_ns, 0);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, ClockSyncOneHost, ::testing::Values(4, 80));

// Made-up identity tables: `groups` clock groups of `per_group` ranks, dealt round-robin so that
// a group's ranks are not adjacent.
std::vector<std::string> identities(int groups, int per_group) {
  std::vector<std::string> ids;
  for (int i = 0; i < groups * per_group; ++i) ids.push_back("node" + std::to_string(i % groups) + "\nboot-id\n0 0");
  return ids;
}

TEST(ClockSync, RoundsDropOnlyPastSixtyFourLeadersBesidesRankZerosGroup) {
  const auto leader = clock_group_leaders(identities(3, 4));
  EXPECT_EQ(leader, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(measuring_leaders(leader), 2);  // rank 0's group measures nothing
  EXPECT_EQ(measuring_leaders(clock_group_leaders(identities(1, 80))), 0);
  // 65 groups: 64 leaders ping rank 0, 8 rounds each; one group more and the rounds drop.
  EXPECT_EQ(clock_rounds(measuring_leaders(clock_group_leaders(identities(65, 2)))), 8);
  EXPECT_EQ(clock_rounds(measuring_leaders(clock_group_leaders(identities(66, 2)))), 3);
}

// Made-up clocks: the leader's timer runs 5 s ahead of the host clock, this rank's 2 s behind,
// so this rank's timer is 7 s behind the leader's; the leader is 1 us behind rank 0.
TEST(ClockSync, AHostsOtherRankTakesTheLeadersOffsetPlusTheDifferenceOfTheirTimers) {
  const int64_t s = 1'000'000'000;
  ClockEstimate leader{2, "node1", 1000, 40'000, 100 * s + 5 * s, 0};  // rank 0 - leader = 1 us at 105 s
  ClockEstimate own{3, "node1", 0, 0, 0, 777};
  const HostClockRead leader_read{5 * s, 60, 100 * s - 1'000'000, false};  // read 1 ms before its round trip
  const HostClockRead own_read{-2 * s, 80, 100 * s - 1'000'500, false};    // 500 ns before the leader's read
  const ClockEstimate e = estimate_from_leader(leader, leader_read, own, own_read);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.unix_minus_timer_ns, 777);
  EXPECT_EQ(e.offset_ns, 1000 + 7 * s);            // rank 0 - own = (rank 0 - leader) + (leader - own)
  EXPECT_EQ(e.at_ns, 100 * s + 5 * s - 7 * s);     // the leader's moment, 100 s host time, on own's timer
  // The bound: the leader's round trip, both reads, and drift: 500 ppm over the 500 ns between
  // the reads (0.25 ns) and 20 ppm over the 1 ms from the reads to the round trip (20 ns).
  EXPECT_EQ(e.rtt_ns, 40'000 + 60 + 80 + 2 * 21);
  // Timers that are the host clock itself read it exactly and never drift from it.
  const ClockEstimate exact =
      estimate_from_leader(leader, HostClockRead{0, 0, 1, true}, own, HostClockRead{0, 0, 999'999'999, true});
  EXPECT_EQ(exact.offset_ns, 1000);
  EXPECT_EQ(exact.rtt_ns, 40'000);
}

}  // namespace
}  // namespace commbench
