// Bootstrap::allgather routed through hosts (bootstrap/host_route.h): each rank a thread with its
// own client of the job's store, as each worker is a process with its own; hosts' first ranks
// start their own stores on the address through which they reach the job's store (loopback here).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "bootstrap/collectives.h"
#include "bootstrap/host_tree.h"
#include "test_bootstrap_ranks.h"
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
      int value = r == round * 4 ? 1000 + round : -1;  // every host its own leader, with no readers
      b.broadcast(&value, sizeof(value), round * 4, std::chrono::milliseconds(10000));
      ASSERT_EQ(value, 1000 + round);
    }
  });
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
}

TEST(HostRoute, ARankThatNeverArrivesIsNamedByItsHostsFirstRank) {
  const auto run = run_without_rank_2([](Bootstrap& b, int r, Millis timeout) {
    int x = r, all[4];
    b.allgather(&x, sizeof(x), all, timeout);
  });
  const auto& errors = run.errors;
  EXPECT_NE(errors[0].find("rank 2 has not arrived"), std::string::npos) << errors[0];
  EXPECT_EQ(run.missing[0], std::vector<int>{2});
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

// Every root, leaders and the others alike (hosts {0,3,6}, {1,4}, {2,5}), sizes from 0 B to 100 KB,
// with barriers between: every rank gets the root's bytes, and the host's other ranks never touch
// the job's store after they have found their leader (one GET of its address), where the star
// made every rank read every broadcast and meet at every barrier there.
TEST(HostRoute, BroadcastsAndBarriersReachEveryRankThroughItsHostsLeader) {
  const std::string token = "host-route-token";
  auto job = start_server(nullptr, token);
  constexpr int kWorld = 7;
  const std::vector<size_t> sizes{8, 0, 128, 1, 100000, 128, 64};
  std::vector<int> job_calls;
  auto errors = run_ranks(
      *job, token, kWorld, [](int r) { return r % 3; },
      [&](Bootstrap& b, int r) {
        for (int root = 0; root < kWorld; ++root) {
          const size_t n = sizes[static_cast<size_t>(root)];
          Bytes buf = r == root ? block_of(root, 7, n) : Bytes(n, 0xEE);
          b.broadcast(buf.data(), n, root, std::chrono::milliseconds(10000));
          ASSERT_EQ(buf, block_of(root, 7, n)) << "rank " << r << ", root " << root;
          if (root % 2) b.barrier(std::chrono::milliseconds(10000));
          if (root == 3) {  // allgathers interleave, their tables named in step with the exchange
            int all[kWorld], mine = r * 3;
            b.allgather(&mine, sizeof(mine), all, std::chrono::milliseconds(10000));
            for (int from = 0; from < kWorld; ++from) ASSERT_EQ(all[from], from * 3);
          }
        }
      },
      -1, &job_calls);
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  for (int r = 3; r < kWorld; ++r) EXPECT_EQ(job_calls[static_cast<size_t>(r)], 1) << "rank " << r;
  EXPECT_EQ(job->key_count(), 3u) << "the leaders' addresses only: every broadcast and barrier cleaned up";
}

// A gather through the hosts (hosts {0,3,6}, {1,4}, {2,5}), every root in turn, leaders and the
// others alike, sizes from 0 B to 100 KB: the root's table holds every block in rank order, the
// other ranks' buffers are untouched, a host's other ranks speak to the job's store only to find
// their leader and, when they are the root, to read the hosts' blocks (two requests); and the
// root's delete leaves nothing behind.
TEST(HostRoute, AGatherReachesItsRootAloneThroughTheHostsLeaders) {
  const std::string token = "host-route-token";
  auto job = start_server(nullptr, token);
  constexpr int kWorld = 7;
  const std::vector<size_t> sizes{8, 0, 100000};
  std::vector<int> job_calls;
  auto errors = run_ranks(
      *job, token, kWorld, [](int r) { return r % 3; },
      [&](Bootstrap& b, int r) {
        int round = 0;
        for (size_t n : sizes)
          for (int root = 0; root < kWorld; ++root, ++round) {
            const Bytes mine = block_of(r, round, n);
            Bytes all(n * kWorld + 1, 0xEE);  // a guard byte past the table
            b.gather(mine.data(), n, all.data(), root, std::chrono::milliseconds(10000));
            if (round == 4) {  // other collectives interleave
              int everyone[kWorld], v = r;
              b.allgather(&v, sizeof(v), everyone, std::chrono::milliseconds(10000));
              ASSERT_EQ(everyone[kWorld - 1], kWorld - 1);
            }
            if (r != root) {
              ASSERT_EQ(std::count(all.begin(), all.end(), 0xEE), static_cast<long>(all.size()))
                  << "rank " << r << " is not the root " << root << " but its buffer was written";
              continue;
            }
            for (int from = 0; from < kWorld; ++from) {
              const Bytes want = block_of(from, round, n);
              ASSERT_TRUE(std::equal(want.begin(), want.end(), all.begin() + static_cast<long>(from * n)))
                  << "root " << root << ", " << n << " B: block of rank " << from;
            }
            ASSERT_EQ(all.back(), 0xEE) << "written past the table";
          }
        b.barrier(std::chrono::milliseconds(10000));  // the last root has read before keys are counted
      },
      -1, &job_calls);
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  for (int r = 3; r < kWorld; ++r)
    EXPECT_EQ(job_calls[static_cast<size_t>(r)], 1 + 2 * static_cast<int>(sizes.size())) << "rank " << r;
  EXPECT_EQ(job->key_count(), 3u) << "the leaders' addresses only: every gather cleaned up";
}

// A gather whose rank never arrives: its leader names it, and the root names the host whose
// blocks never came (hosts {0,2} and {1,3}; rank 2 never calls; the root, rank 3, is on the other
// host and not its leader).
TEST(HostRoute, AGatherWithoutARankNamesItAtItsLeaderAndItsHostAtTheRoot) {
  const auto run = run_without_rank_2([](Bootstrap& b, int r, Millis timeout) {
    int x = r, all[4];
    b.gather(&x, sizeof(x), all, 3, timeout);
    // Not to the closing barrier, which would wait for rank 2 too.
    throw std::runtime_error("gather returned");
  }, std::chrono::milliseconds(4000));  // rank 1 must meet rank 3 and store its host's blob well within it
  const auto& errors = run.errors;
  EXPECT_NE(errors[0].find("host gather"), std::string::npos) << errors[0];
  EXPECT_NE(errors[0].find("rank 2 has not arrived"), std::string::npos) << errors[0];
  EXPECT_EQ(run.missing[0], std::vector<int>{2});
  EXPECT_NE(errors[3].find("host 0 has not sent its ranks' blocks"), std::string::npos) << errors[3];
  EXPECT_EQ(errors[1], "gather returned") << "rank 1 handed its block on and has nothing to wait for";
}

// "Did any rank fail?" without rank 2 (host 0's other rank): rank 0, host 0's leader, misses it,
// and the others, on host 1, fail naming and recording rank 2 from rank 0's verdict instead of
// blaming rank 0 for a broadcast that never came.
TEST(HostRoute, FirstRankThatWithoutARankNamesItOnEveryHost) {
  const auto run = run_without_rank_2([](Bootstrap& b, int, Millis timeout) { b.first_rank_that(false, timeout); });
  for (int r : {0, 1, 3}) {
    EXPECT_NE(run.errors[static_cast<size_t>(r)].find("rank 2 has not arrived"), std::string::npos)
        << "rank " << r << ": " << run.errors[static_cast<size_t>(r)];
    EXPECT_EQ(run.missing[static_cast<size_t>(r)], std::vector<int>{2}) << "rank " << r;
  }
}

// Nobody leaves a barrier before the last rank has entered it, wherever that rank is: a host's
// other rank, another host's leader, or host 0's leader (the one that opens the barrier when the
// others are early).
TEST(HostRoute, ABarrierHoldsEveryRankUntilTheLastOneArrives) {
  for (const int late : {5, 2, 0}) {
    auto job = start_server(nullptr, "t");
    std::atomic<bool> entered{false};
    std::atomic<int> early{0};
    auto errors = run_ranks(*job, "t", 7, [](int r) { return r % 3; }, [&](Bootstrap& b, int r) {
      if (r == late) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        entered = true;
      }
      b.barrier(std::chrono::milliseconds(10000));
      if (!entered) ++early;
    });
    for (int r = 0; r < 7; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    EXPECT_EQ(early.load(), 0) << "ranks left the barrier before rank " << late << " entered it";
  }
}

// What is missing is named: a host's rank (by its leader), a host (by the other leaders), the
// root of a broadcast (by the leaders that waited for it, in the missing list too).
TEST(HostRoute, ABarrierOrBroadcastWithoutARankNamesWhatIsMissing) {
  auto job = start_server(nullptr, "t");
  // Hosts {0,2} and {1,3}; rank 2, host 0's other rank, never calls.
  auto errors = run_ranks(*job, "t", 4, [](int r) { return r % 2; }, [&](Bootstrap& b, int) {
    b.barrier(std::chrono::milliseconds(1500));
  }, /*absent=*/2);
  EXPECT_NE(errors[0].find("only 1 of the 2 ranks of host 0 arrived"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("only 1 of 2 hosts arrived"), std::string::npos) << errors[1];
  // Rank 3 times out, or finds its leader gone after rank 1's own timeout: either way it names it.
  EXPECT_NE(errors[3].find("rank 1 (the first rank on this host)"), std::string::npos) << errors[3];
  // Rank 3, host 1's other rank, roots a broadcast it never makes.
  auto fresh = start_server(nullptr, "t");
  std::mutex m;
  std::map<int, std::vector<int>> missing_of;
  errors = run_ranks(*fresh, "t", 4, [](int r) { return r % 2; }, [&](Bootstrap& b, int r) {
    std::vector<int> missing;
    b.record_missing_ranks_in(&missing);
    int x = 0;
    try {
      b.broadcast(&x, sizeof(x), 3, std::chrono::milliseconds(1500));
    } catch (...) {
      std::lock_guard<std::mutex> lock(m);
      missing_of[r] = missing;
      throw;
    }
  }, /*absent=*/3);
  for (int leader : {0, 1}) {
    EXPECT_NE(errors[static_cast<size_t>(leader)].find("root rank 3 has not arrived"), std::string::npos)
        << errors[static_cast<size_t>(leader)];
    EXPECT_EQ(missing_of[leader], std::vector<int>{3}) << "rank " << leader;
  }
  EXPECT_NE(errors[2].find("rank 0 (the first rank on this host)"), std::string::npos) << errors[2];
}

// A rank that expects another size than the root sent is refused with both sizes, on the root's
// host and on the others, leaders or not; the ranks that agree get the bytes.
TEST(HostRoute, ABroadcastOfAnotherSizeIsRefusedWithBothSizes) {
  auto job = start_server(nullptr, "t");
  std::mutex m;
  std::map<int, std::string> refused;
  auto errors = run_ranks(*job, "t", 6, [](int r) { return r % 3; }, [&](Bootstrap& b, int r) {
    // Rank 0: the leader of the root's host (it passes the root's bytes on first); rank 2: another
    // host's leader; rank 4: another host's other rank.
    const size_t n = r == 0 || r == 2 || r == 4 ? 16 : 8;
    Bytes buf(n, r == 3 ? 0x5A : 0);
    try {
      b.broadcast(buf.data(), n, 3, std::chrono::milliseconds(5000));
      EXPECT_EQ(buf, Bytes(8, 0x5A)) << "rank " << r;
    } catch (const StoreError& e) {
      std::lock_guard<std::mutex> lock(m);
      refused[r] = e.what();  // and on to the closing barrier with the others
    }
  });
  for (int r = 0; r < 6; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  ASSERT_EQ(refused.size(), 3u);
  for (int r : {0, 2, 4})
    EXPECT_NE(refused[r].find(fmt::format("root rank 3 sent 8 bytes, rank {} expects 16", r)), std::string::npos)
        << refused[r];
}

// Every rank's last call is the closing barrier, and a leader's store ends with its thread right
// after it (as with a worker process). A leader that returned as soon as it opened the barrier
// would take its store away while its ranks still confirm that they saw it open; repeated, since
// that race is lost only now and then.
TEST(HostRoute, TheClosingBarrierKeepsEachLeadersStoreUntilItsRanksHaveLeft) {
  for (int round = 0; round < 20; ++round) {
    auto job = start_server(nullptr, "t");
    auto errors = run_ranks(*job, "t", 8, [](int r) { return r / 4; }, [](Bootstrap&, int) {});
    for (int r = 0; r < 8; ++r) ASSERT_EQ(errors[static_cast<size_t>(r)], "") << "round " << round << ", rank " << r;
  }
}

TEST(HostRoute, RefusesALayoutThatDoesNotHoldItsRank) {
  auto job = start_server(nullptr, "t");
  auto client = connect_to(*job, "t");
  Bootstrap b(*client, "p", 1, 4);
  EXPECT_THROW(b.route_through_hosts({0, 2, {0, 2}}, "t"), std::invalid_argument);
  EXPECT_THROW(b.route_through_hosts({2, 2, {1}}, "t"), std::invalid_argument);
  EXPECT_THROW(b.route_through_hosts({1, 2, {1, 4}}, "t"), std::invalid_argument);
  b.route_through_hosts({0, 1, {0, 1, 2, 3}}, "t");  // one host: the job's store, as before
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

// Run by hand (bench/run_bootstrap_scale.sh, "bcbar" rows): COMMBENCH_BOOTSTRAP_RANKS ranks
// (default 1024), COMMBENCH_BOOTSTRAP_RANKS_PER_HOST per host (default 8), routed through the
// hosts' leaders or, with COMMBENCH_BOOTSTRAP_ROUTED=0, all on the job's store (the star): 10
// rounds of a 128-byte broadcast (roots spread over the world) and a barrier, timed from the first
// rank leaving a warm-up barrier to the last rank leaving the last barrier.
TEST(HostRoute, DISABLED_MeasureBroadcastAndBarrier) {
  const char* env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS");
  const char* per_env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS_PER_HOST");
  const char* routed_env = std::getenv("COMMBENCH_BOOTSTRAP_ROUTED");
  const int world = env ? std::atoi(env) : 1024;
  const int per_host = per_env ? std::atoi(per_env) : 8;
  const bool routed = !routed_env || std::string(routed_env) != "0";
  constexpr int kRounds = 10;
  auto job = start_server(nullptr, "t");
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  std::atomic<int64_t> first_start{INT64_MAX}, last_end{0};
  std::atomic<int> correct{0};
  std::vector<int> job_calls;
  auto errors = run_ranks(
      *job, "t", world, [&](int r) { return r / per_host; },
      [&](Bootstrap& b, int r) {
        b.barrier(std::chrono::milliseconds(120000));  // connected, and every thread started
        int64_t t = now_ns(), seen = first_start.load();
        while (t < seen && !first_start.compare_exchange_weak(seen, t)) {
        }
        bool ok = true;
        for (int round = 0; round < kRounds; ++round) {
          const int root = (round * 7919) % world;
          Bytes buf = r == root ? block_of(root, round, 128) : Bytes(128, 0);
          b.broadcast(buf.data(), buf.size(), root, std::chrono::milliseconds(120000));
          ok &= buf == block_of(root, round, 128);
          b.barrier(std::chrono::milliseconds(120000));
        }
        t = now_ns(), seen = last_end.load();
        while (t > seen && !last_end.compare_exchange_weak(seen, t)) {
        }
        correct += ok;
      },
      -1, &job_calls, routed);
  for (const auto& e : errors) ASSERT_EQ(e, "");
  EXPECT_EQ(correct.load(), world);
  long requests = 0;
  for (int c : job_calls) requests += c;
  // On one machine every store shares the same cores, so the time shows the total work; the job's
  // store's requests show what one process serves, which is what limits a cluster.
  std::printf("%d ranks, %d per host, %s: %d broadcasts + barriers took %.1f ms; %ld requests to the job's store "
              "(the whole run: connect, warm-up and close included)\n",
              world, per_host, routed ? "routed" : "star", kRounds, (last_end.load() - first_start.load()) / 1e6,
              requests);
}

}  // namespace
}  // namespace commbench
