// Bootstrap collectives with one thread per rank, each with its own client over real sockets.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>

#include "bootstrap/collectives.h"
#include "test_bootstrap_ranks.h"
#include "test_store_helpers.h"

namespace commbench {
namespace {

using namespace test;

// A rank- and iteration-dependent block, so a block from the wrong rank or round is caught.
std::vector<uint8_t> block_for(int rank, int iteration, size_t bytes) {
  std::vector<uint8_t> b(bytes);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(rank * 31 + iteration * 7 + i);
  return b;
}

class BootstrapWorlds : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapWorlds, AllgatherBroadcastBarrierRepeated) {
  const int world = GetParam();
  auto server = start_server();
  constexpr int kRounds = 100;
  constexpr size_t kBytes = 24;
  std::atomic<int> checked{0};
  auto error = run_ranks(*server, world, "job/run0", [&](Bootstrap& b) {
    for (int it = 0; it < kRounds; ++it) {
      auto mine = block_for(b.rank(), it, kBytes);
      std::vector<uint8_t> all(kBytes * static_cast<size_t>(world));
      b.allgather(mine.data(), kBytes, all.data(), 5s);
      for (int r = 0; r < world; ++r) {
        auto expected = block_for(r, it, kBytes);
        ASSERT_EQ(0, std::memcmp(all.data() + r * kBytes, expected.data(), kBytes))
            << "iteration " << it << " block " << r;
      }
      const int root = it % world;
      auto buf = b.rank() == root ? block_for(root, it, kBytes) : std::vector<uint8_t>(kBytes);
      b.broadcast(buf.data(), kBytes, root, 5s);
      ASSERT_EQ(buf, block_for(root, it, kBytes)) << "iteration " << it;
      b.barrier(5s);
      ++checked;
    }
  });
  EXPECT_EQ(error, "");
  EXPECT_EQ(checked.load(), world * kRounds);
  // Last reader deletes: nothing of 300 finished collectives is left in the store.
  EXPECT_EQ(server->key_count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Ranks, BootstrapWorlds, ::testing::Values(2, 3, 5, 8));

TEST(Bootstrap, BarrierReallyWaitsForEveryone) {
  auto server = start_server();
  constexpr int kWorld = 4;
  std::atomic<int> arrived{0};
  std::atomic<bool> early_exit{false};
  auto error = run_ranks(*server, kWorld, "p", [&](Bootstrap& b) {
    for (int it = 0; it < 20; ++it) {
      if (b.rank() == it % kWorld) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      ++arrived;
      b.barrier(5s);
      if (arrived.load() < kWorld * (it + 1)) early_exit = true;
      b.barrier(5s);  // nobody starts the next round before everyone checked this one
    }
  });
  EXPECT_EQ(error, "");
  EXPECT_FALSE(early_exit.load());
}

TEST(Bootstrap, KeysStayBoundedDuringALongRun) {
  auto server = start_server();
  std::atomic<size_t> most_keys{0};
  auto error = run_ranks(*server, 4, "long", [&](Bootstrap& b) {
    uint32_t v = static_cast<uint32_t>(b.rank());
    std::vector<uint32_t> all(4);
    for (int it = 0; it < 300; ++it) {
      b.allgather(&v, sizeof(v), all.data(), 5s);
      size_t now = server->key_count();
      size_t prev = most_keys.load();
      while (now > prev && !most_keys.compare_exchange_weak(prev, now)) {
      }
    }
  });
  EXPECT_EQ(error, "");
  // At most a couple of collectives are in flight at once (4 blocks + counter each).
  EXPECT_LE(most_keys.load(), 15u);
  EXPECT_EQ(server->key_count(), 0u);
}

TEST(Bootstrap, KvIsScopedUnderThePrefix) {
  auto server = start_server();
  auto error = run_ranks(*server, 3, "job/run7", [&](Bootstrap& b) {
    b.kv_set("addr/" + std::to_string(b.rank()), bytes_of("worker" + std::to_string(b.rank())));
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ(string_of(b.kv_get("addr/" + std::to_string(r), 5s)), "worker" + std::to_string(r));
    }
  });
  EXPECT_EQ(error, "");
  auto client = connect_to(*server);
  EXPECT_TRUE(client->check("job/run7/kv/addr/2"));
  EXPECT_FALSE(client->check("addr/2"));
}

TEST(Bootstrap, ConcurrentRunsWithDifferentPrefixesDoNotMix) {
  auto server = start_server();
  std::string error_a, error_b;
  auto run = [&](const std::string& prefix, uint8_t tag, std::string& error) {
    error = run_ranks(*server, 3, prefix, [&](Bootstrap& b) {
      for (int it = 0; it < 50; ++it) {
        uint8_t mine = static_cast<uint8_t>(tag + b.rank());
        uint8_t all[3];
        b.allgather(&mine, 1, all, 5s);
        for (int r = 0; r < 3; ++r) ASSERT_EQ(all[r], tag + r);
      }
    });
  };
  std::thread a([&] { run("runA", 10, error_a); });
  std::thread c([&] { run("runB", 100, error_b); });
  a.join();
  c.join();
  EXPECT_EQ(error_a, "");
  EXPECT_EQ(error_b, "");
}

TEST(Bootstrap, AllgatherTimeoutNamesTheMissingRank) {
  auto server = start_server();
  // Ranks 0 and 1 of 3 show up; rank 2 never does.
  std::vector<std::string> messages(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      auto client = connect_to(*server);
      Bootstrap b(*client, "run3", r, 3);
      uint8_t v = 0, all[3];
      try {
        b.allgather(&v, 1, all, 150ms);
      } catch (const StoreError& e) {
        if (e.code() == StoreError::Code::Timeout) messages[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& m : messages) {
    EXPECT_NE(m.find("rank 2 has not arrived"), std::string::npos) << m;
    EXPECT_NE(m.find("150 ms"), std::string::npos) << m;
  }
}

TEST(Bootstrap, BroadcastTimeoutNamesTheRoot) {
  auto server = start_server();
  auto client = connect_to(*server);
  Bootstrap b(*client, "p", 0, 4);
  uint8_t buf[4];
  try {
    b.broadcast(buf, sizeof(buf), 3, 100ms);
    ADD_FAILURE() << "no timeout";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreError::Code::Timeout);
    EXPECT_NE(std::string(e.what()).find("root rank 3"), std::string::npos) << e.what();
  }
}

TEST(Bootstrap, BarrierTimeoutCountsWhoArrived) {
  auto server = start_server();
  auto client = connect_to(*server);
  Bootstrap b(*client, "p", 1, 3);
  try {
    b.barrier(100ms);
    ADD_FAILURE() << "no timeout";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreError::Code::Timeout);
    EXPECT_NE(std::string(e.what()).find("only 1 of 3 ranks"), std::string::npos) << e.what();
  }
}

TEST(Bootstrap, MismatchedSizesAreReported) {
  auto server = start_server();
  auto error = run_ranks(*server, 2, "p", [&](Bootstrap& b) {
    std::vector<uint8_t> mine(b.rank() == 0 ? 4 : 8), all(16);
    b.allgather(mine.data(), mine.size(), all.data(), 2s);
  });
  EXPECT_NE(error.find("every rank must pass the same size"), std::string::npos) << error;
}

TEST(Bootstrap, SingleRankNeedsNoStoreTraffic) {
  auto server = start_server();
  auto client = connect_to(*server);
  Bootstrap b(*client, "solo", 0, 1);
  uint64_t v = 42, out = 0;
  b.allgather(&v, sizeof(v), &out, 1s);
  b.broadcast(&v, sizeof(v), 0, 1s);
  b.barrier(1s);
  EXPECT_EQ(out, 42u);
  EXPECT_EQ(server->key_count(), 0u);
}

TEST(Bootstrap, RejectsImpossibleRanks) {
  auto server = start_server();
  auto client = connect_to(*server);
  EXPECT_THROW(Bootstrap(*client, "p", 2, 2), std::invalid_argument);
  EXPECT_THROW(Bootstrap(*client, "p", 0, 0), std::invalid_argument);
  Bootstrap b(*client, "p", 0, 2);
  uint8_t x = 0;
  EXPECT_THROW(b.broadcast(&x, 1, 5, 1s), std::invalid_argument);
}

// Every rank connects its own client (the rendezvous), then one allgather of 128 bytes.
// Returns how many ranks saw every block right.
int rendezvous_and_allgather(const StoreServer& server, int world, const std::string& prefix) {
  constexpr size_t kBytes = 128;
  std::atomic<int> correct{0};
  auto error = run_ranks(server, world, prefix, [&](Bootstrap& b) {
    auto mine = block_for(b.rank(), 0, kBytes);
    std::vector<uint8_t> all(kBytes * static_cast<size_t>(world));
    b.allgather(mine.data(), kBytes, all.data(), 30s);
    for (int r = 0; r < world; ++r) {
      if (std::memcmp(all.data() + r * kBytes, block_for(r, 0, kBytes).data(), kBytes) != 0) {
        return;
      }
    }
    ++correct;
  });
  EXPECT_EQ(error, "");
  return correct.load();
}

TEST(Bootstrap, ManyRanksRendezvousAndAllgather) {
  // The shape of a large job's start. Checks correctness only; timing is measured by hand with
  // the disabled test below (docs/bootstrap.md has the numbers).
  auto server = start_server();
  EXPECT_EQ(rendezvous_and_allgather(*server, 256, "big"), 256);
  EXPECT_EQ(server->key_count(), 0u);
}

// Run by hand: commbench_unit_tests --gtest_also_run_disabled_tests
//   --gtest_filter='*MeasureRendezvousAndAllgather' (ranks: COMMBENCH_BOOTSTRAP_RANKS, default
//   1024)
TEST(Bootstrap, DISABLED_MeasureRendezvousAndAllgather) {
  const char* env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS");
  const int world = env ? std::atoi(env) : 1024;
  auto server = start_server();
  const auto start = std::chrono::steady_clock::now();
  const int correct = rendezvous_and_allgather(*server, world, "measure");
  const auto elapsed =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  EXPECT_EQ(correct, world);
  std::printf("%d ranks: connect + allgather(128 B) took %.1f ms (thread start included)\n", world,
              elapsed.count());
}

// Run by hand (bench/run_bootstrap_scale.sh, SAMPLES=1): what a case's samples cost to collect,
// through an allgather (every rank receives every rank's block) or a gather to rank 0. The ranks
// connect and meet at a barrier first; the clock runs from rank 0 leaving that barrier until the
// last rank returns (the root, for a gather). COMMBENCH_BOOTSTRAP_RANKS (default 1024),
// COMMBENCH_SAMPLE_BYTES per rank (default 800: 100 samples), COMMBENCH_GATHER=1 for the gather.
TEST(Bootstrap, DISABLED_MeasureSampleCollection) {
  const char* ranks_env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS");
  const char* bytes_env = std::getenv("COMMBENCH_SAMPLE_BYTES");
  const char* gather_env = std::getenv("COMMBENCH_GATHER");
  const int world = ranks_env ? std::atoi(ranks_env) : 1024;
  const size_t bytes = bytes_env ? std::strtoull(bytes_env, nullptr, 10) : 800;
  const bool gather = gather_env && std::string(gather_env) == "1";
  auto server = start_server();
  std::atomic<int64_t> start_ns{0}, last_ns{0};
  std::atomic<size_t> held{0};
  auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  auto error = run_ranks(*server, world, "measure", [&](Bootstrap& b) {
    auto mine = block_for(b.rank(), 0, bytes);
    b.barrier(60s);
    if (b.rank() == 0) start_ns = now_ns();
    const bool receives = !gather || b.rank() == 0;
    std::vector<uint8_t> all(receives ? bytes * static_cast<size_t>(world) : 0);
    if (gather) b.gather(mine.data(), bytes, all.data(), 0, 120s);
    else b.allgather(mine.data(), bytes, all.data(), 120s);
    const int64_t t = now_ns();
    for (int64_t prev = last_ns.load(); t > prev && !last_ns.compare_exchange_weak(prev, t);) {
    }
    if (receives) ASSERT_EQ(0, std::memcmp(all.data() + (world - 1) * bytes, block_for(world - 1, 0, bytes).data(), bytes));
    held += all.size();
  });
  EXPECT_EQ(error, "");
  std::printf("%d ranks: %s of %zu B per rank took %.1f ms; ranks held %zu bytes of tables in all\n", world,
              gather ? "gather" : "allgather", bytes, static_cast<double>(last_ns - start_ns) / 1e6, held.load());
}

}  // namespace
}  // namespace commbench

namespace commbench {
namespace {

// A byte pattern that changes with the rank and with the offset at every scale, so that a slice
// put back at the wrong offset, or taken from the wrong rank, is caught.
uint8_t big_block_byte(int rank, size_t i) {
  return static_cast<uint8_t>(((i * 2654435761u) >> 13) ^ (i >> 20) ^ static_cast<size_t>(rank * 131));
}

// Larger than the store's message limit (64 MiB): 3 ranks × 23 MiB is a 69 MiB table, and the
// broadcast is 70 MiB. Both used to fail ("the reply would be … over the store's limit"); now they
// run as slices under Bootstrap::kSliceBudget and leave nothing behind.
TEST(BootstrapSlices, AnAllgatherOrABroadcastLargerThanTheStoresLimitArrivesWhole) {
  auto server = start_server();
  constexpr int kWorld = 3;
  constexpr size_t kBytes = (23u << 20) + 5;  // not a multiple of the slice
  constexpr size_t kBroadcast = (70u << 20) + 3;
  static_assert(kWorld * kBytes > (64u << 20) && kBroadcast > (64u << 20));
  std::atomic<int> checked{0};
  auto error = run_ranks(*server, kWorld, "job/big", [&](Bootstrap& b) {
    std::vector<uint8_t> mine(kBytes);
    for (size_t i = 0; i < kBytes; ++i) mine[i] = big_block_byte(b.rank(), i);
    std::vector<uint8_t> all(kBytes * kWorld);
    b.allgather(mine.data(), kBytes, all.data(), 60s);
    for (int r = 0; r < kWorld; ++r)
      for (size_t i = 0; i < kBytes; ++i)
        ASSERT_EQ(all[r * kBytes + i], big_block_byte(r, i)) << "block of rank " << r << ", byte " << i;
    std::vector<uint8_t> value(kBroadcast, 0);
    if (b.rank() == 1)
      for (size_t i = 0; i < kBroadcast; ++i) value[i] = big_block_byte(7, i);
    b.broadcast(value.data(), kBroadcast, 1, 60s);
    for (size_t i = 0; i < kBroadcast; ++i) ASSERT_EQ(value[i], big_block_byte(7, i)) << "byte " << i;
    ++checked;
  });
  EXPECT_EQ(error, "");
  EXPECT_EQ(checked.load(), kWorld);
  EXPECT_EQ(server->key_count(), 0u);
}

// Ranks that pass different sizes to a sliced collective fail, every one of them, with the sizes
// named: they neither drift out of step (one rank's later slices matched against another's
// next collective) nor succeed with part of a block. Before the first slice carried the total,
// a rank whose slices were a leading part of another's (16 MiB against 24 MiB at 2 ranks, or 8 MiB,
// one slice) returned with part of the other's block while the other timed out blaming it, and
// a broadcast's receiver that passed 32 MiB (or 16) took the first part of a 40 MiB (or 20) one.
TEST(BootstrapSlices, RanksThatPassDifferentSizesAllFailWithTheSizesNamed) {
  auto server = start_server();
  struct Case {
    const char* what;
    size_t bytes[2];
    bool broadcast;
  };
  const Case cases[] = {
      {"both sliced, one's slices a leading part of the other's", {16u << 20, 24u << 20}, false},
      {"one sliced, one not (8 MiB is one slice at 2 ranks)", {8u << 20, 24u << 20}, false},
      {"broadcast, both sliced, the receiver's slices a leading part", {40u << 20, 32u << 20}, true},
      {"broadcast, the receiver not sliced", {(20u << 20), 16u << 20}, true},
  };
  int n = 0;
  for (const Case& c : cases) {
    std::string messages[2];
    run_ranks(*server, 2, "job/mismatch" + std::to_string(n++), [&](Bootstrap& b) {
      const size_t bytes = c.bytes[b.rank()];
      std::vector<uint8_t> mine(bytes, 1), all(2 * bytes);
      try {
        if (c.broadcast) b.broadcast(mine.data(), bytes, 0, 20s);
        else b.allgather(mine.data(), bytes, all.data(), 20s);
        messages[b.rank()] = "(no error)";
      } catch (const StoreError& e) {
        messages[b.rank()] = e.what();
        EXPECT_EQ(e.code(), StoreError::Code::Protocol) << c.what << ", rank " << b.rank() << ": " << e.what();
      }
    });
    for (int r = 0; r < 2; ++r) {
      if (c.broadcast && r == 0) continue;  // the root writes and returns: only receivers compare
      EXPECT_NE(messages[r].find("every rank must pass the same size"), std::string::npos)
          << c.what << ", rank " << r << ": " << messages[r];
      const bool both_sliced = c.bytes[1 - r] > (c.broadcast ? Bootstrap::kSliceBudget : Bootstrap::kSliceBudget / 2) &&
                               c.bytes[r] > (c.broadcast ? Bootstrap::kSliceBudget : Bootstrap::kSliceBudget / 2);
      if (both_sliced)  // the other rank's total, not a slice's size
        EXPECT_NE(messages[r].find(std::to_string(c.bytes[1 - r])), std::string::npos)
            << c.what << ", rank " << r << ": " << messages[r];
    }
  }
}

}  // namespace
}  // namespace commbench

namespace commbench {
namespace {

using namespace test;

// Every root in turn, sizes from 0 to 4 KB, worlds of 1 to 8: the root's table holds every rank's
// block in rank order, the other ranks' buffers are not touched (a gather writes nothing there),
// and the root's deletes leave the store empty.
TEST(BootstrapGather, EveryRanksBlockReachesTheRootAloneAndNothingIsLeft) {
  for (int world : {1, 2, 3, 5, 8}) {
    auto server = start_server();
    std::atomic<int> tables{0};
    auto error = run_ranks(*server, world, "job/g" + std::to_string(world), [&](Bootstrap& b) {
      int round = 0;
      for (size_t bytes : {size_t{24}, size_t{0}, size_t{1}, size_t{4096}})
        for (int root = 0; root < world; ++root, ++round) {
          const auto mine = block_for(b.rank(), round, bytes);
          std::vector<uint8_t> all(bytes * static_cast<size_t>(world) + 1, 0xEE);  // a guard byte past it
          b.gather(mine.data(), bytes, all.data(), root, 5s);
          if (b.rank() != root) {
            ASSERT_EQ(std::count(all.begin(), all.end(), 0xEE), static_cast<long>(all.size()))
                << "rank " << b.rank() << " is not the root " << root << " but its buffer was written";
            continue;
          }
          for (int r = 0; r < world; ++r) {
            const auto want = block_for(r, round, bytes);
            ASSERT_TRUE(std::equal(want.begin(), want.end(), all.begin() + static_cast<long>(r * bytes)))
                << "world " << world << ", root " << root << ", " << bytes << " B: block of rank " << r;
          }
          ASSERT_EQ(all.back(), 0xEE) << "written past the table";
          ++tables;
        }
      b.barrier(5s);  // the last gather's root has read (and deleted) before the keys are counted
    });
    EXPECT_EQ(error, "") << "world " << world;
    EXPECT_EQ(tables.load(), 4 * world) << "world " << world;
    EXPECT_EQ(server->key_count(), 0u) << "world " << world;
  }
}

// A gather's other ranks hand on their block and go on: they do not wait for the root, which is
// what keeps a case's samples from costing an allgather (every rank waiting for every block).
TEST(BootstrapGather, TheOtherRanksReturnWithoutWaitingForTheRoot) {
  auto server = start_server();
  auto client = connect_to(*server);
  Bootstrap b(*client, "p", 1, 3);
  const uint32_t v = 7;
  EXPECT_NO_THROW(b.gather(&v, sizeof(v), nullptr, 0, 100ms));
  EXPECT_EQ(server->key_count(), 1u) << "rank 1's block waits in the store for the root";
  EXPECT_THROW(b.gather(&v, sizeof(v), nullptr, 3, 100ms), std::invalid_argument);
  EXPECT_THROW(b.gather(&v, sizeof(v), nullptr, -1, 100ms), std::invalid_argument);
}

TEST(BootstrapGather, ARootTimeoutNamesAndRecordsTheRanksThatNeverSent) {
  auto server = start_server();
  std::string message;
  std::vector<int> missing;
  std::thread rank1([&] {
    auto client = connect_to(*server);
    Bootstrap b(*client, "run", 1, 4);
    uint8_t v = 1;
    b.gather(&v, 1, nullptr, 0, 5s);
  });
  rank1.join();  // it does not wait for the root: its block is in the store before the root looks
  auto client = connect_to(*server);
  Bootstrap b(*client, "run", 0, 4);
  b.record_missing_ranks_in(&missing);
  uint8_t v = 0, all[4];
  try {
    b.gather(&v, 1, all, 0, 300ms);
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreError::Code::Timeout);
    message = e.what();
  }
  EXPECT_NE(message.find("gather #0"), std::string::npos) << message;
  EXPECT_NE(message.find("ranks 2, 3 have not arrived"), std::string::npos) << message;
  EXPECT_NE(message.find("300 ms"), std::string::npos) << message;
  EXPECT_EQ(missing, (std::vector<int>{2, 3}));
}

// Sliced (3 ranks × 23 MiB is over the store's 64 MiB reply limit) and unsliced, the root refuses
// a rank that passed another size, naming both sizes. The other ranks cannot know: unsliced they
// return; sliced they wait for the root between slices, and time out naming the slice.
TEST(BootstrapGather, TheRootRefusesARankThatPassedAnotherSize) {
  struct Case {
    const char* what;
    size_t bytes[3];
  };
  const Case cases[] = {
      {"unsliced", {8, 8, 16}},
      {"both sliced", {23u << 20, 23u << 20, 24u << 20}},
      {"the root sliced, rank 2 not", {23u << 20, 23u << 20, 8}},
      {"the root not sliced, rank 2 sliced", {8, 8, 23u << 20}},
  };
  for (const Case& c : cases) {
    auto server = start_server();
    std::string messages[3];
    StoreError::Code codes[3]{};
    run_ranks(*server, 3, "job/mismatch", [&](Bootstrap& b) {
      const size_t bytes = c.bytes[b.rank()];
      std::vector<uint8_t> mine(bytes, 1), all(b.rank() == 0 ? 3 * bytes : 0);
      try {
        b.gather(mine.data(), bytes, all.data(), 0, 3s);
        messages[b.rank()] = "(no error)";
      } catch (const StoreError& e) {
        messages[b.rank()] = e.what();
        codes[b.rank()] = e.code();
      }
    });
    EXPECT_EQ(codes[0], StoreError::Code::Protocol) << c.what << ": " << messages[0];
    EXPECT_NE(messages[0].find("every rank must pass the same size"), std::string::npos) << c.what << ": " << messages[0];
    EXPECT_NE(messages[0].find("rank 2 contributed"), std::string::npos) << c.what << ": " << messages[0];
    if (c.bytes[0] > Bootstrap::kSliceBudget / 3 && c.bytes[2] > Bootstrap::kSliceBudget / 3)  // the total, not a slice's
      EXPECT_NE(messages[0].find(std::to_string(c.bytes[2]) + " bytes"), std::string::npos) << c.what << ": " << messages[0];
    for (int r = 1; r < 3; ++r) {
      if (c.bytes[r] <= Bootstrap::kSliceBudget / 3) {
        EXPECT_EQ(messages[r], "(no error)") << c.what << ", rank " << r;
        continue;
      }
      EXPECT_EQ(codes[r], StoreError::Code::Timeout) << c.what << ", rank " << r << ": " << messages[r];
      EXPECT_NE(messages[r].find("slice 1 of"), std::string::npos) << c.what << ", rank " << r << ": " << messages[r];
    }
  }
}

// "Did any rank fail, and which first?": every rank gets the same answer, the lowest rank that
// said true (or -1), whatever the pattern, and nothing is left in the store.
TEST(BootstrapGather, EveryRankLearnsTheLowestRankThatSaidTrue) {
  for (int world : {1, 2, 5}) {
    auto server = start_server();
    const std::vector<std::vector<int>> patterns{{}, {world - 1}, {0}, {1, world - 1}, {}};
    std::vector<std::vector<int>> answers(static_cast<size_t>(world));
    auto error = run_ranks(*server, world, "job/first", [&](Bootstrap& b) {
      for (const auto& says_true : patterns) {
        const bool mine = std::find(says_true.begin(), says_true.end(), b.rank()) != says_true.end();
        answers[static_cast<size_t>(b.rank())].push_back(b.first_rank_that(mine, 5s));
      }
      b.barrier(5s);
    });
    EXPECT_EQ(error, "") << "world " << world;
    std::vector<int> want;
    for (const auto& says_true : patterns) {
      int lowest = -1;
      for (int r : says_true)
        if (r < world && (lowest < 0 || r < lowest)) lowest = r;
      want.push_back(lowest);
    }
    for (int r = 0; r < world; ++r) EXPECT_EQ(answers[static_cast<size_t>(r)], want) << "world " << world << ", rank " << r;
    EXPECT_EQ(server->key_count(), 0u) << "world " << world;
  }
}

// A rank that never comes is named by every rank that waited, not only by rank 0: the others
// wait for rank 0's answer and would otherwise blame rank 0, whose answer never came (the agent
// blames the first rank named that has no error of its own).
TEST(BootstrapGather, ARankMissingFromFirstRankThatIsNamedByEveryRank) {
  auto server = start_server();
  std::string messages[2];
  std::vector<int> missing[2];
  StoreError::Code codes[2]{};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      auto client = connect_to(*server);
      Bootstrap b(*client, "run", r, 3);  // rank 2 never comes
      b.record_missing_ranks_in(&missing[r]);
      try {
        b.first_rank_that(false, 400ms);
        messages[r] = "(no error)";
      } catch (const StoreError& e) {
        messages[r] = e.what();
        codes[r] = e.code();
      }
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(codes[r], StoreError::Code::Timeout) << "rank " << r << ": " << messages[r];
    EXPECT_NE(messages[r].find("rank 2 has not arrived"), std::string::npos) << "rank " << r << ": " << messages[r];
    EXPECT_EQ(missing[r], std::vector<int>{2}) << "rank " << r << ": " << messages[r];
  }
}

// 3 ranks × 23 MiB: 5 slices. The root comes late, and meanwhile the others have stored one slice
// each and wait for it between slices, rather than putting all five in the store (115 MB here;
// N × a rank's samples in a large job).
TEST(BootstrapGather, AGatherLargerThanTheStoresLimitArrivesWholeOneSliceAtATime) {
  auto server = start_server();
  constexpr int kWorld = 3;
  constexpr size_t kBytes = (23u << 20) + 5;
  static_assert(kWorld * kBytes > (64u << 20));
  std::atomic<int> checked{0};
  size_t keys_when_the_root_came = 0;
  auto error = run_ranks(*server, kWorld, "job/big", [&](Bootstrap& b) {
    std::vector<uint8_t> mine(kBytes);
    for (size_t i = 0; i < kBytes; ++i) mine[i] = big_block_byte(b.rank(), i);
    std::vector<uint8_t> all(b.rank() == 2 ? kBytes * kWorld : 0);
    if (b.rank() == 2) {  // once the others' first slices are in, and a while later
      for (int i = 0; i < 1000 && server->key_count() < 2; ++i) std::this_thread::sleep_for(10ms);
      std::this_thread::sleep_for(300ms);
      keys_when_the_root_came = server->key_count();
    }
    b.gather(mine.data(), kBytes, all.data(), 2, 60s);
    if (b.rank() != 2) return;
    for (int r = 0; r < kWorld; ++r)
      for (size_t i = 0; i < kBytes; ++i)
        ASSERT_EQ(all[r * kBytes + i], big_block_byte(r, i)) << "block of rank " << r << ", byte " << i;
    ++checked;
  });
  EXPECT_EQ(error, "");
  EXPECT_EQ(checked.load(), 1);
  // The two others' first slices and the barrier's counter; unpaced it was their ten slices.
  EXPECT_LE(keys_when_the_root_came, 3u);
  EXPECT_GE(keys_when_the_root_came, 2u);
  EXPECT_EQ(server->key_count(), 0u);
}

}  // namespace
}  // namespace commbench
