// Bootstrap::allgather routed through hosts (bootstrap/host_route.h): each rank a thread with its
// own client of the job's store, as each worker is a process with its own; hosts' first ranks
// start their own stores on the address through which they reach the job's store (loopback here).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "bootstrap/collectives.h"
#include "bootstrap/host_tree.h"
#include "test_store_helpers.h"

namespace commbench {
namespace {

using namespace test;

// A rank- and round-dependent block: a block from the wrong rank or round is caught.
Bytes block_of(int rank, int round, size_t bytes) {
  Bytes b(bytes);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(rank * 29 + round * 13 + i * 5);
  return b;
}

// `host_of(r)` for every rank; hosts are numbered by their lowest rank, as the agents number them.
std::vector<HostLayout> layouts(int world, const std::function<int(int)>& host_of) {
  std::vector<int> index_of_host;  // host_of value -> index
  std::vector<HostLayout> out;
  std::vector<int> index(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    const int h = host_of(r);
    if (h >= static_cast<int>(index_of_host.size())) index_of_host.resize(static_cast<size_t>(h) + 1, -1);
    if (index_of_host[static_cast<size_t>(h)] < 0) {
      index_of_host[static_cast<size_t>(h)] = static_cast<int>(out.size());
      out.push_back({static_cast<int>(out.size()), 0, {}});
    }
    out[static_cast<size_t>(index_of_host[static_cast<size_t>(h)])].ranks.push_back(r);
    index[static_cast<size_t>(r)] = index_of_host[static_cast<size_t>(h)];
  }
  std::vector<HostLayout> by_rank;
  for (int r = 0; r < world; ++r) {
    HostLayout l = out[static_cast<size_t>(index[static_cast<size_t>(r)])];
    l.hosts = static_cast<int>(out.size());
    by_rank.push_back(l);
  }
  return by_rank;
}

// Runs body(bootstrap, rank) on one thread per rank (skipping `absent`), every allgather routed
// through hosts; returns each rank's first error ("" when none).
std::vector<std::string> run_ranks(StoreServer& job, const std::string& token, int world,
                                   const std::function<int(int)>& host_of,
                                   const std::function<void(Bootstrap&, int)>& body, int absent = -1) {
  const auto layout = layouts(world, host_of);
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    if (r == absent) continue;
    threads.emplace_back([&, r] {
      try {
        auto client = connect_to(job, token);
        Bootstrap b(*client, "exec0", r, world);
        b.route_allgathers_through_hosts(layout[static_cast<size_t>(r)], token);
        body(b, r);
        b.close(std::chrono::milliseconds(10000));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

TEST(HostRoute, RanksDealtRoundRobinOverHostsGetEveryBlockInRankOrder) {
  const std::string token = "host-route-token";
  auto job = start_server(nullptr, token);
  constexpr int kWorld = 7;  // hosts {0,3,6}, {1,4}, {2,5}: uneven, not contiguous
  const std::vector<size_t> sizes{8, 0, 128, 1, 100000, 128};
  auto errors = run_ranks(*job, token, kWorld, [](int r) { return r % 3; }, [&](Bootstrap& b, int r) {
    for (size_t round = 0; round < sizes.size(); ++round) {
      const size_t n = sizes[round];
      const Bytes mine = block_of(r, static_cast<int>(round), n);
      Bytes all(n * kWorld + 1, 0xEE);  // one guard byte past the table
      b.allgather(mine.data(), n, all.data(), std::chrono::milliseconds(10000));
      for (int from = 0; from < kWorld; ++from) {
        const Bytes want = block_of(from, static_cast<int>(round), n);
        ASSERT_TRUE(std::equal(want.begin(), want.end(), all.begin() + static_cast<long>(from * n)))
            << "rank " << r << " round " << round << ": block of rank " << from;
      }
      ASSERT_EQ(all.back(), 0xEE) << "written past the table";
      if (round == 2) b.barrier(std::chrono::milliseconds(10000));  // other collectives still interleave
    }
  });
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  // What stays in the job's store is the three leaders' addresses (the agent deletes the
  // execution's prefix at its end): every host's blocks were deleted by host 0 after reading.
  EXPECT_EQ(job->key_count(), 3u);
}

TEST(HostRoute, OneRankPerHostAndManyHostsAlsoWork) {
  auto job = start_server(nullptr, "t");
  constexpr int kWorld = 9;  // 9 hosts: a tree 4 hops deep
  auto errors = run_ranks(*job, "t", kWorld, [](int r) { return r; }, [&](Bootstrap& b, int r) {
    for (int round = 0; round < 3; ++round) {
      std::vector<int> all(kWorld, -1);
      const int mine = r * 10 + round;
      b.allgather(&mine, sizeof(mine), all.data(), std::chrono::milliseconds(10000));
      for (int from = 0; from < kWorld; ++from) ASSERT_EQ(all[static_cast<size_t>(from)], from * 10 + round);
    }
  });
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
}

TEST(HostRoute, ARankThatNeverArrivesIsNamedByItsHostsFirstRank) {
  auto job = start_server(nullptr, "t");
  std::mutex m;
  std::vector<int> missing_at_rank0;
  // Hosts {0,2} and {1,3}; rank 2 never calls.
  auto errors = run_ranks(
      *job, "t", 4, [](int r) { return r % 2; },
      [&](Bootstrap& b, int r) {
        std::vector<int> missing;
        b.record_missing_ranks_in(&missing);
        int x = r, all[4];
        try {
          b.allgather(&x, sizeof(x), all, std::chrono::milliseconds(1500));
        } catch (...) {
          if (r == 0) {
            std::lock_guard<std::mutex> lock(m);
            missing_at_rank0 = missing;
          }
          throw;
        }
      },
      /*absent=*/2);
  EXPECT_NE(errors[0].find("rank 2 has not arrived"), std::string::npos) << errors[0];
  EXPECT_EQ(missing_at_rank0, std::vector<int>{2});
  EXPECT_NE(errors[1], "") << "nobody gets a table without rank 2's block";
  EXPECT_NE(errors[3], "");
}

TEST(HostRoute, DifferentSizesAreRefusedNotMisplaced) {
  auto job = start_server(nullptr, "t");
  auto errors = run_ranks(*job, "t", 4, [](int r) { return r / 2; }, [&](Bootstrap& b, int r) {
    const size_t n = r == 3 ? 16 : 8;  // rank 3 disagrees
    Bytes mine(n, 1), all(16 * 4);
    b.allgather(mine.data(), n, all.data(), std::chrono::milliseconds(1500));
  });
  EXPECT_NE(errors[2].find("rank 3 contributed 16 bytes"), std::string::npos) << errors[2];
  for (int r = 0; r < 4; ++r) EXPECT_NE(errors[static_cast<size_t>(r)], "") << "rank " << r << " got a table";
  // A whole host that agrees with itself but not with host 0: refused at host 0, not read at
  // the wrong stride.
  auto fresh = start_server(nullptr, "t");  // the failed round above left its keys behind
  errors = run_ranks(*fresh, "t", 4, [](int r) { return r / 2; }, [&](Bootstrap& b, int r) {
    const size_t n = r >= 2 ? 16 : 8;
    Bytes mine(n, 1), all(16 * 4);
    b.allgather(mine.data(), n, all.data(), std::chrono::milliseconds(1500));
  });
  EXPECT_NE(errors[0].find("the host of rank 2 contributed 16-byte blocks"), std::string::npos) << errors[0];
  for (int r = 0; r < 4; ++r) EXPECT_NE(errors[static_cast<size_t>(r)], "") << "rank " << r << " got a table";
}

TEST(HostRoute, RefusesALayoutThatDoesNotHoldItsRank) {
  auto job = start_server(nullptr, "t");
  auto client = connect_to(*job, "t");
  Bootstrap b(*client, "p", 1, 4);
  EXPECT_THROW(b.route_allgathers_through_hosts({0, 2, {0, 2}}, "t"), std::invalid_argument);
  EXPECT_THROW(b.route_allgathers_through_hosts({2, 2, {1}}, "t"), std::invalid_argument);
  EXPECT_THROW(b.route_allgathers_through_hosts({1, 2, {1, 4}}, "t"), std::invalid_argument);
  b.route_allgathers_through_hosts({0, 1, {0, 1, 2, 3}}, "t");  // one host: the job's store, as before
}

TEST(HostRoute, PublishedStoreAddressesAreReadStrictly) {
  const auto parse = [](const std::string& text) { return HostAgentExchange::parse_address(bytes_of(text)); };
  const auto good = parse("29500 7 10.0.0.1");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->port, 29500);
  EXPECT_EQ(good->local_readers, 7);
  EXPECT_EQ(good->host, "10.0.0.1");
  EXPECT_EQ(parse("1 0 fe80::1%eth0")->host, "fe80::1%eth0");
  for (const char* bad : {"", "29500", "29500 7", "29500 7 ", "0 1 h", "65536 1 h", "1 -1 h", "1 2000000 h",
                          "x 1 h", "99999999999999999999 1 h", "1 99999999999999999999 h", "1  1 h", "-5 1 h"})
    EXPECT_FALSE(parse(bad)) << "'" << bad << "'";
}

// Run by hand (bench/run_bootstrap_scale.sh, "job" rows): COMMBENCH_BOOTSTRAP_RANKS ranks (default
// 1024), COMMBENCH_BOOTSTRAP_RANKS_PER_HOST per host (default 8), each a thread with its own
// client as each worker is a process with its own: connect + one 128-byte allgather routed
// through the hosts, timed like Bootstrap.DISABLED_MeasureRendezvousAndAllgather (the star).
TEST(HostRoute, DISABLED_MeasureRoutedAllgather) {
  const char* env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS");
  const char* per_env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS_PER_HOST");
  const int world = env ? std::atoi(env) : 1024;
  const int per_host = per_env ? std::atoi(per_env) : 8;
  constexpr size_t kBytes = 128;
  auto job = start_server(nullptr, "t");
  std::atomic<int> correct{0};
  const auto start = std::chrono::steady_clock::now();
  auto errors = run_ranks(*job, "t", world, [&](int r) { return r / per_host; }, [&](Bootstrap& b, int r) {
    const Bytes mine = block_of(r, 0, kBytes);
    Bytes all(kBytes * static_cast<size_t>(world));
    b.allgather(mine.data(), kBytes, all.data(), std::chrono::milliseconds(60000));
    for (int from = 0; from < world; ++from)
      if (std::memcmp(all.data() + from * kBytes, block_of(from, 0, kBytes).data(), kBytes) != 0) return;
    ++correct;
  });
  const auto elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
  for (const auto& e : errors) ASSERT_EQ(e, "");
  EXPECT_EQ(correct.load(), world);
  std::printf("%d ranks, %d per host: connect + routed allgather(128 B) + close took %.1f ms (thread start "
              "included)\n", world, per_host, elapsed.count());
}

}  // namespace
}  // namespace commbench
