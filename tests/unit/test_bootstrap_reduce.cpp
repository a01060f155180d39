// Bootstrap::reduce_to_rank0 through one store and routed through hosts (bootstrap/
// partial_reduction.h, host_route_reduce.cpp, HostAgentExchange::reduce): what rank 0 gets, what
// the other ranks are left with, who is named when a rank or a host never sends, and what is left
// in the stores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "bootstrap/collectives.h"
#include "test_bootstrap_ranks.h"
#include "test_store_helpers.h"

namespace commbench {
namespace {

using namespace test;

// Quarters from -5 to 10.75: every sum of them is exact in any order, so a routed sum (tree order)
// can be compared exactly. Rank-, round- and index-dependent, so a value from the wrong rank, round
// or place is caught.
double value(int rank, int round, size_t i) {
  return static_cast<double>((rank * 37 + round * 5 + static_cast<int>(i % 1000) * 11) % 64) * 0.25 - 5.0;
}

std::vector<double> values_of(int rank, int round, size_t count) {
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = value(rank, round, i);
  return v;
}

std::vector<double> expected(ReduceOp op, int world, int round, size_t count) {
  std::vector<double> out = values_of(0, round, count);
  for (int r = 1; r < world; ++r)
    for (size_t i = 0; i < count; ++i)
      out[i] = op == ReduceOp::Max ? std::max(out[i], value(r, round, i)) : out[i] + value(r, round, i);
  return out;
}

constexpr double kUntouched = -1234.5;

// Checks one reduction as rank `r` of `world` sees it: rank 0 holds the whole, the others' buffers
// are not written. Returns "" or what is wrong.
std::string check(int r, int world, int round, ReduceOp op, const std::vector<double>& got, size_t count) {
  if (r != 0) {
    for (double x : got)
      if (x != kUntouched) return "rank " + std::to_string(r) + " is not rank 0 but its buffer was written";
    return "";
  }
  const auto want = expected(op, world, round, count);
  for (size_t i = 0; i < count; ++i)
    if (got[i] != want[i])
      return fmt::format("world {}, round {}, {} of {} values: [{}] is {}, expected {}", world, round,
                         op == ReduceOp::Max ? "max" : "sum", count, i, got[i], want[i]);
  return got.size() > count && got[count] != kUntouched ? "written past the result" : "";
}

TEST(BootstrapReduce, EveryRanksValuesAreFoldedAtRankZeroAloneAndNothingIsLeft) {
  for (int world : {1, 2, 3, 5, 8}) {
    auto server = start_server();
    std::mutex m;
    std::vector<std::string> wrong;
    std::atomic<int> results{0};
    auto error = run_ranks(*server, world, "job/r" + std::to_string(world), [&](Bootstrap& b) {
      int round = 0;
      for (size_t count : {size_t{7}, size_t{0}, size_t{1}, size_t{3000}})
        for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
          const auto mine = values_of(b.rank(), round, count);
          std::vector<double> got(count + 1, kUntouched);  // a guard value past the result
          b.reduce_to_rank0(mine.data(), count, got.data(), op, 5s);
          const std::string problem = check(b.rank(), world, round++, op, got, count);
          std::lock_guard<std::mutex> lock(m);
          if (!problem.empty()) wrong.push_back(problem);
          if (b.rank() == 0) ++results;
        }
      b.barrier(5s);  // rank 0 has read (and deleted) the last reduction's keys before they are counted
    });
    EXPECT_EQ(error, "") << "world " << world;
    EXPECT_EQ(wrong, std::vector<std::string>{}) << "world " << world;
    EXPECT_EQ(results.load(), 8) << "world " << world;
    EXPECT_EQ(server->key_count(), 0u) << "world " << world;
  }
}

// Through one store a sum adds in rank order, as a loop over the ranks' samples did, so that the
// record's series is what it was when rank 0 gathered every sample (any double, not only exact ones).
TEST(BootstrapReduce, ThroughOneStoreASumAddsInRankOrder) {
  constexpr int kWorld = 5;
  constexpr size_t kCount = 2000;
  std::vector<std::vector<double>> sent(kWorld, std::vector<double>(kCount));
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> any(1e-3, 1e6);
  for (auto& v : sent)
    for (double& x : v) x = any(gen);
  std::vector<double> loop(kCount, 0.0);
  for (size_t i = 0; i < kCount; ++i)
    for (int r = 0; r < kWorld; ++r) loop[i] += sent[r][i];
  auto server = start_server();
  std::vector<double> got(kCount);
  auto error = run_ranks(*server, kWorld, "job/order", [&](Bootstrap& b) {
    b.reduce_to_rank0(sent[b.rank()].data(), kCount, b.rank() == 0 ? got.data() : nullptr, ReduceOp::Sum, 5s);
  });
  EXPECT_EQ(error, "");
  EXPECT_EQ(got, loop);
}

TEST(BootstrapReduce, ARankZeroTimeoutNamesAndRecordsTheRanksThatNeverSent) {
  auto server = start_server();
  std::thread rank1([&] {
    auto client = connect_to(*server);
    Bootstrap b(*client, "run", 1, 4);
    const double v = 1;
    b.reduce_to_rank0(&v, 1, nullptr, ReduceOp::Max, 5s);  // returns once its value is stored
  });
  rank1.join();
  auto client = connect_to(*server);
  Bootstrap b(*client, "run", 0, 4);
  std::vector<int> missing;
  b.record_missing_ranks_in(&missing);
  double v = 0, out = 0;
  std::string message;
  try {
    b.reduce_to_rank0(&v, 1, &out, ReduceOp::Max, 300ms);
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreError::Code::Timeout);
    message = e.what();
  }
  EXPECT_NE(message.find("reduction #0"), std::string::npos) << message;
  EXPECT_NE(message.find("ranks 2, 3 have not arrived"), std::string::npos) << message;
  EXPECT_EQ(missing, (std::vector<int>{2, 3}));
}

// A rank that passed another count is refused by rank 0, unsliced (the sizes differ) and sliced
// (3 ranks: a slice is 699,050 values; the first slices are the same size, the totals are not).
TEST(BootstrapReduce, ARankThatPassedAnotherCountIsRefusedNotFolded) {
  struct Case {
    const char* what;
    size_t counts[3];
    const char* says;
  };
  const Case cases[] = {
      {"unsliced", {8, 8, 16}, "rank 2 sent 16 values (this slice: 16), where this rank passed 8"},
      {"both sliced", {700000, 700000, 700001}, "rank 2 sent 700001 values (this slice: 699050), where this rank passed 700000"},
  };
  for (const Case& c : cases) {
    auto server = start_server();
    std::string messages[3];
    StoreError::Code codes[3]{};
    run_ranks(*server, 3, "job/count", [&](Bootstrap& b) {
      const size_t n = c.counts[b.rank()];
      std::vector<double> mine(n, 1.0), out(b.rank() == 0 ? n : 0);
      try {
        b.reduce_to_rank0(mine.data(), n, out.data(), ReduceOp::Sum, 3s);
        messages[b.rank()] = "(no error)";
      } catch (const StoreError& e) {
        messages[b.rank()] = e.what();
        codes[b.rank()] = e.code();
      }
    });
    EXPECT_EQ(codes[0], StoreError::Code::Protocol) << c.what << ": " << messages[0];
    EXPECT_NE(messages[0].find(c.says), std::string::npos) << c.what << ": " << messages[0];
  }
}

// 3 ranks × 1.5 million values (36 MB through one store, over its 16 MiB slice budget): three
// slices with a barrier between them, and every value arrives.
TEST(BootstrapReduce, AReductionLargerThanASliceArrivesWhole) {
  constexpr int kWorld = 3;
  constexpr size_t kCount = 1'500'000;
  static_assert(kWorld * kCount * sizeof(double) > Bootstrap::kSliceBudget);
  auto server = start_server();
  std::string problem;
  auto error = run_ranks(*server, kWorld, "job/big", [&](Bootstrap& b) {
    const auto mine = values_of(b.rank(), 3, kCount);
    std::vector<double> got(kCount, kUntouched);
    b.reduce_to_rank0(mine.data(), kCount, got.data(), ReduceOp::Sum, 60s);
    if (b.rank() == 0) problem = check(0, kWorld, 3, ReduceOp::Sum, got, kCount);
  });
  EXPECT_EQ(error, "");
  EXPECT_EQ(problem, "");
  EXPECT_EQ(server->key_count(), 0u);
}

// A leader reads large partials a few at a time; when one read times out, the keys of the reads
// not made yet are checked too, so that every rank that never sent is named, not only the first
// group's.
TEST(BootstrapReduce, ReadingPartialsAFewAtATimeNamesEveryMissingOne) {
  auto server = start_server();
  auto client = connect_to(*server);
  client->set("r/1", Bytes(24, 1));
  client->set("r/3", Bytes(24, 3));
  std::vector<size_t> read;
  std::vector<std::string> missing;
  try {
    partial::read_each(*client, {"r/1", "r/2", "r/3", "r/4", "r/5"}, 2, 200ms,
                       [&](size_t i, const uint8_t*, size_t) { read.push_back(i); });
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreError::Code::Timeout);
    missing = e.missing_keys();
  }
  EXPECT_EQ(missing, (std::vector<std::string>{"r/2", "r/4", "r/5"}));
  client->set("r/2", Bytes(24, 2));
  client->set("r/4", Bytes(24, 4));
  client->set("r/5", Bytes(24, 5));
  read.clear();
  partial::read_each(*client, {"r/1", "r/2", "r/3", "r/4", "r/5"}, 2, 1000ms,
                     [&](size_t i, const uint8_t* data, size_t size) {
                       EXPECT_EQ(size, 24u);
                       EXPECT_EQ(data[0], i + 1) << "value " << i << " handed on under another index";
                       read.push_back(i);
                     });
  EXPECT_EQ(read, (std::vector<size_t>{0, 1, 2, 3, 4}));
}

// Routed: 11 ranks dealt over 5 hosts (host 3 is two hops below host 0 in the tree). Rank 0 gets
// every rank's values folded, the others' buffers are untouched, the job's store serves no request
// for any reduction (the ranks make as many with two reductions as with twelve), and every store
// is left as it was.
TEST(HostRouteReduce, RanksFoldAtTheirLeadersAndTheLeadersUpTheTreeToRankZero) {
  const std::string token = "reduce-token";
  constexpr int kWorld = 11;
  const auto host_of = [](int r) { return r % 5; };
  std::vector<std::vector<int>> calls(2);
  std::mutex m;
  std::vector<std::string> wrong;
  size_t keys_after[2] = {};
  for (int variant = 0; variant < 2; ++variant) {
    auto job = start_server(nullptr, token);
    const std::vector<size_t> counts = variant == 0 ? std::vector<size_t>{3} : std::vector<size_t>{3, 0, 1, 5000, 7, 64};
    auto errors = run_ranks(
        *job, token, kWorld, host_of,
        [&](Bootstrap& b, int r) {
          int round = 0;
          for (size_t count : counts)
            for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
              const auto mine = values_of(r, round, count);
              std::vector<double> got(count + 1, kUntouched);
              b.reduce_to_rank0(mine.data(), count, got.data(), op, std::chrono::milliseconds(10000));
              const std::string problem = check(r, kWorld, round++, op, got, count);
              std::lock_guard<std::mutex> lock(m);
              if (!problem.empty()) wrong.push_back(problem);
            }
        },
        -1, &calls[static_cast<size_t>(variant)]);
    for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
    keys_after[variant] = job->key_count();
  }
  EXPECT_EQ(wrong, std::vector<std::string>{});
  // Which leader closes the last barrier varies, so the leaders' counts are compared in total.
  ASSERT_EQ(calls[0].size(), calls[1].size());
  EXPECT_EQ(std::accumulate(calls[0].begin(), calls[0].end(), 0), std::accumulate(calls[1].begin(), calls[1].end(), 0))
      << "requests to the job's store, 2 reductions against 12";
  for (int r = 5; r < kWorld; ++r)  // not leaders
    EXPECT_EQ(calls[0][static_cast<size_t>(r)], calls[1][static_cast<size_t>(r)]) << "rank " << r;
  EXPECT_EQ(keys_after[0], 5u) << "the leaders' addresses only";
  EXPECT_EQ(keys_after[1], 5u) << "the leaders' addresses only";
}

// Routed, larger than a slice: 2,098,152 values a rank (16.0 MiB) go as two slices, and host 0's
// leader holds five other ranks' partials of 16 MiB, which one read (80 MiB) would bring back over
// the store's 64 MiB reply limit: it reads them a few at a time. Every value arrives.
TEST(HostRouteReduce, SlicesLargerThanTheStoresReplyLimitArriveWhole) {
  constexpr int kWorld = 7;
  constexpr size_t kCount = (Bootstrap::kSliceBudget / sizeof(double)) + 1000;
  auto job = start_server(nullptr, "t");
  std::string problem;
  auto errors = run_ranks(*job, "t", kWorld, [](int r) { return r < 6 ? 0 : 1; }, [&](Bootstrap& b, int r) {
    const auto mine = values_of(r, 1, kCount);
    std::vector<double> got(r == 0 ? kCount : 0);
    b.reduce_to_rank0(mine.data(), kCount, got.data(), ReduceOp::Max, std::chrono::milliseconds(60000));
    if (r == 0) problem = check(0, kWorld, 1, ReduceOp::Max, got, kCount);
  });
  for (int r = 0; r < kWorld; ++r) EXPECT_EQ(errors[static_cast<size_t>(r)], "") << "rank " << r;
  EXPECT_EQ(problem, "");
  EXPECT_EQ(job->key_count(), 2u) << "the leaders' addresses only";
}

// Hosts {0,2} and {1,3}; rank 2 never calls: its leader, rank 0, names and records it; rank 1 (the
// other host's leader) and rank 3 hand theirs on and return.
TEST(HostRouteReduce, ARankThatNeverSendsIsNamedByItsLeader) {
  const auto run = run_without_rank_2([](Bootstrap& b, int r, Millis timeout) {
    const double v = r;
    double out = 0;
    b.reduce_to_rank0(&v, 1, &out, ReduceOp::Sum, timeout);
    throw std::runtime_error("reduce returned");  // not to the closing barrier, which waits for rank 2
  });
  EXPECT_NE(run.errors[0].find("host reduction"), std::string::npos) << run.errors[0];
  EXPECT_NE(run.errors[0].find("rank 2 has not arrived"), std::string::npos) << run.errors[0];
  EXPECT_EQ(run.missing[0], std::vector<int>{2});
  EXPECT_EQ(run.errors[1], "reduce returned");
  EXPECT_EQ(run.errors[3], "reduce returned");
}

// A host whose leader never comes: rank 0 names the host whose partial never came.
TEST(HostRouteReduce, AHostThatNeverSendsIsNamedAtRankZero) {
  auto job = start_server(nullptr, "t");
  auto errors = run_ranks(
      *job, "t", 4, [](int r) { return r % 2; },
      [&](Bootstrap& b, int r) {
        const double v = r;
        double out = 0;
        b.reduce_to_rank0(&v, 1, &out, ReduceOp::Max, std::chrono::milliseconds(1500));
        throw std::runtime_error("reduce returned");
      },
      /*absent=*/1);
  EXPECT_NE(errors[0].find("host 1 has not sent its partial result"), std::string::npos) << errors[0];
  EXPECT_NE(errors[3].find("rank 1"), std::string::npos) << "rank 3 waited for its leader: " << errors[3];
}

// Rank 3 passes another count: its leader refuses it, naming both counts; rank 0 then waits in
// vain for that host.
TEST(HostRouteReduce, ALeaderRefusesARankThatPassedAnotherCount) {
  auto job = start_server(nullptr, "t");
  auto errors = run_ranks(*job, "t", 4, [](int r) { return r % 2; }, [&](Bootstrap& b, int r) {
    std::vector<double> mine(r == 3 ? 5 : 4, 1.0), out(mine.size());
    b.reduce_to_rank0(mine.data(), mine.size(), out.data(), ReduceOp::Sum, std::chrono::milliseconds(1500));
  });
  EXPECT_NE(errors[1].find("rank 3 sent 5 values"), std::string::npos) << errors[1];
  EXPECT_NE(errors[1].find("every rank must pass the same count"), std::string::npos) << errors[1];
  EXPECT_NE(errors[0].find("host 1 has not sent"), std::string::npos) << errors[0];
}

// Run by hand (bench/run_bootstrap_scale.sh, REDUCE=1): COMMBENCH_BOOTSTRAP_RANKS ranks (default
// 1024), COMMBENCH_BOOTSTRAP_RANKS_PER_HOST per host (default 8), routed through hosts; each
// rank's COMMBENCH_SAMPLE_COUNT doubles (default 1000: a case of 1,000 iterations) to rank 0 and
// the slowest rank per iteration there. COMMBENCH_REDUCE=1 reduces on the way (what the workers
// do since 2026-11-30); 0 gathers every rank's samples and takes the maximum at rank 0 (what they
// did before). Timed from the first rank leaving a barrier until rank 0 holds the result.
TEST(HostRouteReduce, DISABLED_MeasureSlowestPerIteration) {
  const char* env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS");
  const char* per_env = std::getenv("COMMBENCH_BOOTSTRAP_RANKS_PER_HOST");
  const char* count_env = std::getenv("COMMBENCH_SAMPLE_COUNT");
  const char* reduce_env = std::getenv("COMMBENCH_REDUCE");
  const int world = env ? std::atoi(env) : 1024;
  const int per_host = per_env ? std::atoi(per_env) : 8;
  const size_t count = count_env ? std::strtoull(count_env, nullptr, 10) : 1000;
  const bool reduce = !reduce_env || std::string(reduce_env) != "0";
  auto job = start_server(nullptr, "t");
  std::atomic<int64_t> start_ns{0}, done_ns{0};
  size_t held = 0;
  std::string problem;
  const auto now_ns = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  auto errors = run_ranks(*job, "t", world, [&](int r) { return r / per_host; }, [&](Bootstrap& b, int r) {
    const auto mine = values_of(r, 0, count);
    b.barrier(std::chrono::milliseconds(120000));
    if (r == 0) start_ns = now_ns();
    std::vector<double> out(r == 0 ? count : 0);
    if (reduce) {
      b.reduce_to_rank0(mine.data(), count, out.data(), ReduceOp::Max, std::chrono::milliseconds(120000));
      if (r == 0) held = count * sizeof(double);
    } else {
      std::vector<double> all(r == 0 ? count * static_cast<size_t>(world) : 0);
      b.gather(mine.data(), count * sizeof(double), all.data(), 0, std::chrono::milliseconds(120000));
      for (size_t from = 0; r == 0 && from < static_cast<size_t>(world); ++from)
        for (size_t i = 0; i < count; ++i) out[i] = from == 0 ? all[i] : std::max(out[i], all[from * count + i]);
      if (r == 0) held = all.size() * sizeof(double);
    }
    if (r != 0) return;
    done_ns = now_ns();
    problem = check(0, world, 0, ReduceOp::Max, out, count);
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  EXPECT_EQ(problem, "");
  std::printf("%d ranks, %d per host: %s of %zu doubles per rank took %.1f ms; rank 0's table or result: %zu bytes\n", world,
              per_host, reduce ? "reduction" : "gather + max", count, static_cast<double>(done_ns - start_ns) / 1e6,
              held);
}

}  // namespace
}  // namespace commbench
