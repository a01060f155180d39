// The clock estimates of ranks that share a host: they take the host leader's estimate and add
// their own timer's offset to the host clock, so ranks of one process (one timer) come out with
// offset 0 to within a few ns and a bound of two paired clock reads, where a round trip through
// the store would give microseconds.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <limits>
#include <thread>

#include "bootstrap/collectives.h"
#include "measure/clock_sync.h"
#include "test_store_helpers.h"

namespace commbench {
namespace {

using namespace test;

TEST(ClockSync, RanksOnRankZerosHostTakeItsClockWithoutARoundTrip) {
  constexpr int kWorld = 4;
  auto server = start_server();
  std::vector<std::vector<ClockEstimate>> got(kWorld);
  std::vector<std::string> errors(kWorld);
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r)
    threads.emplace_back([&, r] {
      try {
        auto client = connect_to(*server);
        Bootstrap bootstrap(*client, "exec0", r, kWorld);
        got[static_cast<size_t>(r)] = estimate_clock_offsets(bootstrap, "start", 8, Millis(20000));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  // The fastest round trip through this store: what an estimate by ping-pong would be bounded by.
  int64_t fastest_round_trip_ns = std::numeric_limits<int64_t>::max();
  {
    auto client = connect_to(*server);
    client->set("probe", Bytes{1});
    for (int i = 0; i < 20; ++i) {
      const auto a = std::chrono::steady_clock::now();
      client->get("probe", Millis(1000));
      fastest_round_trip_ns = std::min<int64_t>(
          fastest_round_trip_ns, std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - a).count());
    }
  }
  for (int r = 0; r < kWorld; ++r) {
    ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    const auto& all = got[static_cast<size_t>(r)];
    ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
    for (int peer = 0; peer < kWorld; ++peer) {
      const ClockEstimate& e = all[static_cast<size_t>(peer)];
      EXPECT_EQ(e.rank, peer);
      // One process, one timer: the offset is 0 up to the paired reads' rounding.
      EXPECT_LE(std::llabs(e.offset_ns), e.rtt_ns / 2 + 2) << "rank " << peer << " seen by " << r;
      EXPECT_LE(std::llabs(e.at_ns - all[0].at_ns - (-e.offset_ns)), 2) << "rank " << peer << ": rank 0's moment";
      if (peer == 0) EXPECT_EQ(e.rtt_ns, 0);
      else EXPECT_LT(e.rtt_ns, fastest_round_trip_ns) << "rank " << peer << ": a store round trip, not two paired reads";
    }
  }
}

}  // namespace
}  // namespace commbench
