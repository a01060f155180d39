// prime_peers (collectives/prime.h) over the in-memory channel: every rank receives exactly the
// messages every other rank sent it, on any world size, and nothing is left over.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "collectives/prime.h"
#include "commbench/sdk/plugin_error.hpp"
#include "memory_channel.h"

namespace commbench::ucx_backend::test {
namespace {

TEST(Prime, EveryRankExchangesTheMessagesWithEveryPeerAndLeavesNothing) {
  for (int world = 1; world <= 7; ++world) {
    for (int messages : {1, 5}) {
      MemoryFabric fabric(world);
      std::vector<std::thread> threads;
      std::vector<int> failures(static_cast<size_t>(world), 0);
      for (int r = 0; r < world; ++r)
        threads.emplace_back([&, r] {
          MemoryChannel ch(fabric, r);
          ch.begin();
          try {
            prime_peers(ch, messages, 96);
          } catch (const std::exception&) {
            failures[static_cast<size_t>(r)] = 1;
            fabric.abort();
          }
        });
      for (auto& t : threads) t.join();
      for (int r = 0; r < world; ++r) EXPECT_EQ(failures[static_cast<size_t>(r)], 0) << world << " ranks, rank " << r;
      // A message no rank received, or a receive no rank matched, would be left over (or time out).
      EXPECT_TRUE(fabric.leftovers().empty()) << world << " ranks, " << messages << " messages";
      if (::testing::Test::HasFailure()) return;
    }
  }
}

TEST(Prime, MoreMessagesThanTheChannelHasStepsAreRefused) {
  MemoryFabric fabric(2);
  MemoryChannel ch(fabric, 0);
  ch.begin();
  try {
    prime_peers(ch, 4097, 8);
    FAIL() << "4097 messages per peer accepted";
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("4096"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fabric.leftovers().empty());  // refused before anything was posted
}

}  // namespace
}  // namespace commbench::ucx_backend::test
