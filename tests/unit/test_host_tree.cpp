// The hierarchical allgather: simulated hosts, each an agent thread with its own store server,
// over real loopback sockets; local ranks are the blocks the agent speaks for.
#include <gtest/gtest.h>

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <latch>
#include <set>
#include <thread>

#include "bootstrap/host_tree.h"
#include "test_store_helpers.h"

namespace commbench {
namespace {

using namespace test;

TEST(BinomialTree, EveryHostIsReachedOnceWithinLogHops) {
  for (int hosts = 1; hosts <= 70; ++hosts) {
    std::set<int> reached{0};
    std::vector<int> frontier{0};
    int depth = 0;
    while (!frontier.empty()) {
      std::vector<int> next;
      for (int h : frontier) {
        for (int c : binomial_children(h, hosts)) {
          EXPECT_EQ(binomial_parent(c), h) << "hosts " << hosts << " child " << c;
          EXPECT_TRUE(reached.insert(c).second) << "host " << c << " reached twice";
          next.push_back(c);
        }
      }
      frontier = std::move(next);
      if (!frontier.empty()) ++depth;
    }
    EXPECT_EQ(static_cast<int>(reached.size()), hosts);
    int log2_ceil = 0;
    while ((1 << log2_ceil) < hosts) ++log2_ceil;
    EXPECT_LE(depth, log2_ceil) << hosts << " hosts";
  }
  EXPECT_EQ(binomial_parent(0), -1);
  EXPECT_EQ(binomial_children(6, 8), std::vector<int>{7});
  EXPECT_EQ(binomial_children(0, 5), (std::vector<int>{1, 2, 4}));
}

// A rank- and round-dependent block, so a block from the wrong rank or round is caught.
Bytes rank_block(int rank, int round, size_t bytes) {
  Bytes b(bytes);
  for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(rank * 131 + round * 17 + i * 7);
  return b;
}

// A job of `hosts` simulated hosts; host h holds ranks_on(h) contiguous ranks.
struct SimulatedJob {
  int hosts;
  std::function<int(int)> ranks_on;
  std::string token;
  std::unique_ptr<StoreServer> job_store;
  std::vector<std::unique_ptr<StoreServer>> host_stores;  // [0] unused: host 0's is the job's

  SimulatedJob(int hosts_, std::function<int(int)> ranks_on_, std::string token_ = "")
      : hosts(hosts_), ranks_on(std::move(ranks_on_)), token(std::move(token_)),
        host_stores(static_cast<size_t>(hosts_)) {
    job_store = start_server(nullptr, token);
    for (int h = 1; h < hosts; ++h) host_stores[static_cast<size_t>(h)] = start_server(nullptr, token);
  }
  StoreServer& store_of(int h) { return h == 0 ? *job_store : *host_stores[static_cast<size_t>(h)]; }
  int first_rank(int h) const {
    int r = 0;
    for (int i = 0; i < h; ++i) r += ranks_on(i);
    return r;
  }
  int world() const { return first_rank(hosts); }
  Bytes host_blocks(int h, int round, size_t bytes) const {
    Bytes out;
    for (int r = first_rank(h); r < first_rank(h) + ranks_on(h); ++r) {
      const Bytes b = rank_block(r, round, bytes);
      out.insert(out.end(), b.begin(), b.end());
    }
    return out;
  }
  Bytes expected_table(int round, size_t bytes) const {
    Bytes out;
    for (int r = 0; r < world(); ++r) {
      const Bytes b = rank_block(r, round, bytes);
      out.insert(out.end(), b.begin(), b.end());
    }
    return out;
  }
  // Runs body(exchange) on one thread per host (skipping `absent`); first failure, or "".
  std::string run(const std::function<void(HostAgentExchange&)>& body, int absent = -1) {
    std::vector<std::thread> threads;
    std::vector<std::string> errors(static_cast<size_t>(hosts));
    for (int h = 0; h < hosts; ++h) {
      if (h == absent) continue;
      threads.emplace_back([&, h] {
        try {
          auto client = connect_to(*job_store, token);
          HostAgentExchange exchange(*client, store_of(h), "127.0.0.1", "job/run0", h, hosts, token);
          body(exchange);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(h)] = "host " + std::to_string(h) + ": " + e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& e : errors) if (!e.empty()) return e;
    return "";
  }
};

TEST(HostAgentExchange, EveryHostGetsEveryRanksBlockInRankOrderRoundAfterRound) {
  // Uneven hosts (1-3 ranks each), a host count that is no power of two, repeated rounds.
  SimulatedJob job(11, [](int h) { return 1 + h % 3; }, "job-token");
  constexpr size_t kBytes = 40;
  constexpr int kRounds = 6;
  std::atomic<int> checked{0};
  auto error = job.run([&](HostAgentExchange& x) {
    x.rendezvous(10s);
    for (int round = 0; round < kRounds; ++round) {
      const Bytes table = *x.allgather(job.host_blocks(x.host(), round, kBytes), 10s);
      ASSERT_EQ(table, job.expected_table(round, kBytes)) << "host " << x.host() << " round " << round;
      ++checked;
    }
  });
  EXPECT_EQ(error, "");
  EXPECT_EQ(checked.load(), 11 * kRounds);
  // Finished rounds leave nothing behind but the 11 agent addresses (the run's prefix goes at
  // its end); a host store's last child deletes the table it read (applied a moment later).
  EXPECT_EQ(job.job_store->key_count(), 11u);
  for (int h = 1; h < 11; ++h) {
    for (int i = 0; i < 200 && job.store_of(h).key_count() != 0; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_EQ(job.store_of(h).key_count(), 0u) << "host " << h;
  }
}

TEST(HostAgentExchange, OneHostNeedsNoTree) {
  SimulatedJob job(1, [](int) { return 4; });
  auto error = job.run([&](HostAgentExchange& x) {
    x.rendezvous(5s);
    EXPECT_EQ(*x.allgather(job.host_blocks(0, 0, 8), 5s), job.expected_table(0, 8));
  });
  EXPECT_EQ(error, "");
}

TEST(HostAgentExchange, AnAgentWithTheWrongTokenCannotJoin) {
  SimulatedJob job(2, [](int) { return 1; }, "right");
  auto client = connect_to(*job.job_store, "right");
  HostAgentExchange root(*client, *job.job_store, "127.0.0.1", "p", 0, 2, "right");
  root.rendezvous(5s);
  auto client1 = connect_to(*job.job_store, "right");
  HostAgentExchange impostor(*client1, job.store_of(1), "127.0.0.1", "p", 1, 2, "wrong");
  // Its parent's store (host 0's) refuses the proof.
  try {
    impostor.rendezvous(2s);
    ADD_FAILURE() << "joined with the wrong token";
  } catch (const StoreError& e) {
    EXPECT_NE(e.code(), StoreError::Code::Timeout) << e.what();
  }
}

TEST(HostAgentExchange, AMissingHostIsNamedByTheRootAndItsChildrenBlameTheirParent) {
  SimulatedJob job(4, [](int) { return 2; });
  std::vector<std::string> errors(4);
  std::mutex m;
  auto first = job.run([&](HostAgentExchange& x) {
    x.rendezvous(3s);
    try {
      x.allgather(job.host_blocks(x.host(), 0, 16), 1500ms);
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), StoreError::Code::Timeout);
      std::lock_guard<std::mutex> lock(m);
      errors[static_cast<size_t>(x.host())] = e.what();
    }
  }, /*absent=*/3);
  EXPECT_EQ(first, "");
  EXPECT_NE(errors[0].find("host 3 has not sent their ranks' blocks"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("from host 0"), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("from host 0"), std::string::npos) << errors[2];
}

TEST(HostAgentExchange, RejectsImpossibleHosts) {
  auto server = start_server();
  auto client = connect_to(*server);
  EXPECT_THROW(HostAgentExchange(*client, *server, "127.0.0.1", "p", 2, 2, ""), std::invalid_argument);
  EXPECT_THROW(HostAgentExchange(*client, *server, "127.0.0.1", "p", 0, 0, ""), std::invalid_argument);
}

// COMMBENCH_BOOTSTRAP_PREFAULT=1: the simulated hosts' memory is faulted in before the clock
// starts. On a cluster each host faults in its own copy of the table, every host at once; here
// 2,048 simulated hosts queue their first touches on two cores, and on this VM a fault costs tens
// of microseconds (docs/scaling.md). One heap for every thread that never gives memory back (no
// per-thread arenas, no trimming, no mmap per table), touched once and freed: the run's tables
// then land in memory that is already there. `bytes`: the most the run can hold at once.
void prefault_heap(size_t bytes) {
  ::mallopt(M_ARENA_MAX, 1);
  ::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  ::mallopt(M_TRIM_THRESHOLD, -1);  // never trim
  constexpr size_t kBlock = 2 << 20;
  std::vector<void*> blocks;
  for (size_t done = 0; done < bytes; done += kBlock) {
    blocks.push_back(std::malloc(kBlock));
    std::memset(blocks.back(), 1, kBlock);
  }
  for (void* b : blocks) std::free(b);
}

// The calling thread's CPU time (user and system): a simulated host's agent is one thread, and
// its work is what a real host would spend on its own cores.
std::chrono::nanoseconds thread_cpu_time() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// Run by hand (bench/run_bootstrap_scale.sh): commbench_unit_tests --gtest_also_run_disabled_tests
//   --gtest_filter='*MeasureHostTreeAllgather'; COMMBENCH_BOOTSTRAP_RANKS (default 16384) ranks,
//   COMMBENCH_BOOTSTRAP_RANKS_PER_HOST (default 8) per simulated host. Timed from the moment every
//   host's agent has its store up: connecting, rendezvous and one 128-byte-per-rank allgather,
//   until the last host holds the table. Each host checks its table byte for byte once its own
//   clock has stopped.
TEST(HostAgentExchange, DISABLED_MeasureHostTreeAllgather) {
  const char* env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS");
  const char* per_env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS_PER_HOST");
  const int world = env ? std::atoi(env) : 16384;
  const int per_host = per_env ? std::atoi(per_env) : 8;
  ASSERT_GT(world, 0);
  ASSERT_GT(per_host, 0);
  const int hosts = (world + per_host - 1) / per_host;
  auto ranks_on = [=](int h) { return std::min(per_host, world - h * per_host); };
  constexpr size_t kBytes = 128;
  const bool prefault = std::getenv("COMMBENCH_BOOTSTRAP_PREFAULT") != nullptr;
  // Every host holds a table of world × 128 B; 3 GiB covers what 16,384 ranks at 8 per host held
  // at once (1.3-1.5 GB resident).
  if (prefault) prefault_heap(std::min<size_t>(static_cast<size_t>(hosts) * world * kBytes, size_t{3} << 30));
  struct rusage before {};
  ::getrusage(RUSAGE_SELF, &before);
  auto job_store = start_server();
  std::vector<std::unique_ptr<StoreServer>> stores(static_cast<size_t>(hosts));
  Bytes expected;
  for (int r = 0; r < world; ++r) {
    const Bytes b = rank_block(r, 0, kBytes);
    expected.insert(expected.end(), b.begin(), b.end());
  }
  std::atomic<int> correct{0};
  std::vector<std::string> errors(static_cast<size_t>(hosts));
  std::vector<std::thread> threads;
  // When each host finished each phase: started its store, connected, rendezvous, allgather.
  constexpr int kPhases = 4;
  std::vector<std::array<std::chrono::steady_clock::time_point, kPhases>> phase_end(static_cast<size_t>(hosts));
  // Each host's own work while the clock runs: its agent thread's CPU time, and its store's
  // serving thread's (read again once every host is done, since a store serves the hosts below
  // it after its own host has the table). On a cluster each host spends this on its own cores.
  std::vector<std::chrono::nanoseconds> agent_cpu(static_cast<size_t>(hosts));
  std::vector<std::chrono::nanoseconds> store_cpu_at_start(static_cast<size_t>(hosts));
  std::latch agents_up(hosts);
  store_cpu_at_start[0] = job_store->cpu_time();
  for (int h = 0; h < hosts; ++h) {
    threads.emplace_back([&, h] {
      auto& ends = phase_end[static_cast<size_t>(h)];
      try {
        auto& own = stores[static_cast<size_t>(h)];
        if (h > 0) own = start_server();
        ends[0] = std::chrono::steady_clock::now();
        // A host's agent and its store exist before its job starts: the clock starts when every
        // simulated host has one (2,048 threads and servers take seconds to create here).
        agents_up.arrive_and_wait();
        // Host 0's store is the job's, which the other hosts reach as soon as the latch opens:
        // its reading was taken before any thread started. No one knows the other hosts'
        // stores before their own rendezvous.
        if (h > 0) store_cpu_at_start[static_cast<size_t>(h)] = own->cpu_time();
        const auto cpu_start = thread_cpu_time();
        auto client = connect_to(*job_store);
        ends[1] = std::chrono::steady_clock::now();
        HostAgentExchange x(*client, h == 0 ? *job_store : *own, "127.0.0.1", "m", h, hosts, "");
        x.rendezvous(60s);
        ends[2] = std::chrono::steady_clock::now();
        Bytes mine;
        for (int r = h * per_host; r < h * per_host + ranks_on(h); ++r) {
          const Bytes b = rank_block(r, 0, kBytes);
          mine.insert(mine.end(), b.begin(), b.end());
        }
        const auto table = x.allgather(mine, 60s);
        ends[3] = std::chrono::steady_clock::now();
        agent_cpu[static_cast<size_t>(h)] = thread_cpu_time() - cpu_start;
        // Checked once this host's clock has stopped; then freed, as a real host's copy would
        // not share this process's memory with 2,047 others.
        if (*table == expected) ++correct;
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(h)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<double> host_cpu_ms(static_cast<size_t>(hosts));
  for (int h = 0; h < hosts; ++h) {
    const auto i = static_cast<size_t>(h);
    const StoreServer& host_store = h == 0 ? *job_store : *stores[i];
    // A store whose thread ended early reads zero: count none of its work rather than less.
    const auto served = std::max(host_store.cpu_time() - store_cpu_at_start[i], std::chrono::nanoseconds{0});
    host_cpu_ms[i] = std::chrono::duration<double, std::milli>(agent_cpu[i] + served).count();
  }
  auto start = phase_end[0][0];
  for (const auto& ends : phase_end) start = std::max(start, ends[0]);
  auto finished = start;
  for (const auto& ends : phase_end) finished = std::max(finished, ends[kPhases - 1]);
  const std::chrono::duration<double, std::milli> elapsed = finished - start;
  for (int h = 0; h < hosts; ++h) EXPECT_EQ(errors[static_cast<size_t>(h)], "") << "host " << h;
  EXPECT_EQ(correct.load(), hosts);
  struct rusage after {};
  ::getrusage(RUSAGE_SELF, &after);
  std::printf("%d ranks on %d hosts (%d per host): host-tree allgather(128 B) took %.1f ms "
              "(from every agent's store being up)\n",
              world, hosts, per_host, elapsed.count());
  std::printf("  memory %s before the clock; %ld page faults from start-up to the end\n",
              prefault ? "faulted in" : "not faulted in", after.ru_minflt - before.ru_minflt);
  {
    const auto busiest = std::max_element(host_cpu_ms.begin(), host_cpu_ms.end());
    std::vector<double> sorted = host_cpu_ms;
    std::nth_element(sorted.begin(), sorted.begin() + hosts / 2, sorted.end());
    double all = 0;
    for (double ms : host_cpu_ms) all += ms;
    std::printf("  per-host CPU (agent + its store): busiest host %lld %.2f ms, host 0 %.2f ms, "
                "median %.2f ms, all hosts %.1f ms\n",
                static_cast<long long>(busiest - host_cpu_ms.begin()), *busiest, host_cpu_ms[0],
                sorted[static_cast<size_t>(hosts / 2)], all);
  }
  const char* names[kPhases] = {"stores started", "connected", "rendezvous", "allgather"};
  for (int p = 1; p < kPhases; ++p) {
    auto last = start;
    for (const auto& ends : phase_end) last = std::max(last, ends[static_cast<size_t>(p)]);
    std::printf("  last host done with %-15s at %8.1f ms\n", names[p],
                std::chrono::duration<double, std::milli>(last - start).count());
  }
  if (std::getenv("COMMBENCH_BOOTSTRAP_FRESH_MEMORY")) {
    // What this machine charges the simulation for memory alone: every host needs the table in
    // memory of its own, and here the hosts' first touches of it queue on a few cores (on a VM
    // a page fault can cost tens of microseconds). Distinct buffers, all alive, as many threads
    // as cores; an upper bound, since the run above frees a host's table once it is checked.
    const size_t bytes = expected.size();
    const int threads_n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::unique_ptr<uint8_t[]>> tables(static_cast<size_t>(hosts));
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> touchers;
    for (int t = 0; t < threads_n; ++t) {
      touchers.emplace_back([&, t] {
        for (int h = t; h < hosts; h += threads_n) {
          auto& table = tables[static_cast<size_t>(h)];
          table.reset(new uint8_t[bytes]);
          std::memset(table.get(), h, bytes);
        }
      });
    }
    for (auto& t : touchers) t.join();
    const std::chrono::duration<double, std::milli> touched = std::chrono::steady_clock::now() - t0;
    std::printf("  fresh memory: %d tables of %zu bytes touched on %d threads in %.1f ms\n", hosts,
                bytes, threads_n, touched.count());
  }
}

}  // namespace
}  // namespace commbench
