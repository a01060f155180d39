// The exchange of the ranks' packed address lists: lists of different lengths arrive whole on
// every rank (the padding to the longest is what makes one allgather size fit them all); a
// length no list of this world can have, and a rank that never arrives, end it with errors that
// say what happened.
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "address_exchange.h"
#include "errors.h"
#include "fake_bootstrap.h"

namespace commbench::gloo_backend {
namespace {

using test::FakeBootstrap;

TEST(GlooAddressExchange, ListsOfDifferentLengthsArriveWholeOnEveryRank) {
  constexpr int kWorld = 5;
  auto list_of = [](int rank) { return std::vector<char>(static_cast<size_t>(3 * rank + 1), static_cast<char>('a' + rank)); };
  FakeBootstrap host(kWorld);
  std::vector<AddressLists> got(kWorld);
  std::vector<std::string> errors(kWorld);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kWorld; ++rank)
    threads.emplace_back([&, rank, services = host.services(rank)] {
      try {
        got[static_cast<size_t>(rank)] = exchange_address_lists(services, list_of(rank), Deadline(10000));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(rank)] = e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int rank = 0; rank < kWorld; ++rank) {
    ASSERT_EQ(errors[static_cast<size_t>(rank)], "") << "rank " << rank;
    const AddressLists& lists = got[static_cast<size_t>(rank)];
    EXPECT_EQ(lists.stride, list_of(kWorld - 1).size());
    for (int peer = 0; peer < kWorld; ++peer) {
      const auto list = lists.list(peer);
      EXPECT_EQ(std::vector<char>(list.begin(), list.end()), list_of(peer)) << "rank " << rank << ", list of " << peer;
    }
  }
}

TEST(GlooAddressExchange, ALengthNoListCanHaveIsRefusedNamingTheRank) {
  // Rank 1 claims 1 GB: refused before anybody allocates for it.
  FakeBootstrap host(3, [](int call, int rank, size_t bytes, char* slot) {
    EXPECT_EQ(call, 0) << "the lists' allgather must not run";
    const uint64_t length = rank == 1 ? 1'000'000'000 : 10;
    std::memcpy(slot, &length, bytes);
    return true;
  });
  try {
    exchange_address_lists(host.services(0), std::vector<char>(10), Deadline(10000));
    FAIL() << "accepted";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("rank 1 published a Gloo address list of 1000000000 bytes"), std::string::npos)
        << e.what();
  }
}

TEST(GlooAddressExchange, ARankThatNeverArrivesIsATimeoutNamingComm_createsTimeout) {
  FakeBootstrap host(2, [](int, int, size_t, char*) { return false; });
  try {
    exchange_address_lists(host.services(0), std::vector<char>(10), Deadline(1234));
    FAIL() << "no timeout";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_TIMEOUT);
    EXPECT_NE(std::string(e.what()).find("comm_create timeout 1234 ms"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("did not reach comm_create"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace commbench::gloo_backend
