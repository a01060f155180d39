// StoreServer and StoreClient over real loopback sockets: every operation, waiting, timeouts,
// connection handling.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <ctime>
#include <future>
#include <set>
#include <thread>

#include "test_store_helpers.h"

namespace commbench {
namespace {

using namespace test;
using Clock = std::chrono::steady_clock;

template <typename F>
StoreError expect_store_error(F&& f, StoreError::Code code) {
  try {
    f();
  } catch (const StoreError& e) {
    EXPECT_EQ(static_cast<int>(e.code()), static_cast<int>(code)) << e.what();
    return e;
  }
  ADD_FAILURE() << "no StoreError thrown";
  return StoreError(StoreError::Code::Protocol, "none");
}

TEST(Store, SetGetOverwrite) {
  auto server = start_server();
  auto client = connect_to(*server);
  client->set("k", bytes_of("v1"));
  EXPECT_EQ(string_of(client->get("k", 1s)), "v1");
  client->set("k", bytes_of("v2"));
  EXPECT_EQ(string_of(client->get("k", 1s)), "v2");
  client->set("empty", {});
  EXPECT_TRUE(client->get("empty", 1s).empty());
  EXPECT_EQ(server->key_count(), 2u);
  EXPECT_NE(server->port(), 0);
  EXPECT_EQ(server->host(), "127.0.0.1");
}

// The bootstrap bench charges each simulated host its store's CPU: it must be that one thread's,
// growing with the work it serves, bounded by the wall time, and zero once stopped.
TEST(Store, CpuTimeIsTheServingThreadsOwn) {
  auto server = start_server();
  auto client = connect_to(*server);
  client->set("big", Bytes(4 << 20, 7));
  const auto before = server->cpu_time();
  const auto wall_start = Clock::now();
  for (int i = 0; i < 20; ++i) ASSERT_EQ(client->get("big", 5s).size(), size_t{4} << 20);
  const auto served = server->cpu_time() - before;
  const auto wall = Clock::now() - wall_start;
  EXPECT_GT(served, 0ns) << "80 MiB of replies cost the serving thread no CPU";
  EXPECT_LE(served, wall + 10ms) << "one thread cannot use more CPU than the time that passed";
  // The caller's own work is not the server's: 50 ms of this thread's CPU with no requests.
  const auto idle_before = server->cpu_time();
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  const auto spin_until = std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec) + 50ms;
  volatile uint64_t sink = 0;
  while (std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec) < spin_until) {
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<uint64_t>(i);
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  }
  EXPECT_LT(server->cpu_time() - idle_before, 5ms) << "the caller's CPU was counted as the server's";
  server->stop();
  EXPECT_EQ(server->cpu_time(), 0ns);
}

TEST(Store, GetWaitsForALaterSet) {
  auto server = start_server();
  auto waiter = connect_to(*server);
  auto setter = connect_to(*server);
  const auto start = Clock::now();
  std::thread t([&] {
    std::this_thread::sleep_for(100ms);
    setter->set("late", bytes_of("here"));
  });
  EXPECT_EQ(string_of(waiter->get("late", 5s)), "here");
  EXPECT_GE(Clock::now() - start, 90ms);  // it really waited for the set
  t.join();
}

TEST(Store, TheHostingProcessSetsKeysWithoutASocketAndWakesWaiters) {
  auto server = start_server();
  auto waiter = connect_to(*server);
  std::thread t([&] {
    std::this_thread::sleep_for(100ms);
    server->set("table", bytes_of("from the host"));
    server->set("other", bytes_of("x"));
  });
  auto values = waiter->multi_get({"table", "other"}, 5s);
  t.join();
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(string_of(values[0]), "from the host");
  EXPECT_EQ(string_of(values[1]), "x");
  EXPECT_EQ(server->key_count(), 2u);
  server->set("table", bytes_of("overwritten"));  // like a client's SET: the last one wins,
  std::string seen;                                // applied by the event loop a moment later
  for (int i = 0; i < 400 && seen != "overwritten"; ++i) {
    seen = string_of(waiter->get("table", 5s));
    if (seen != "overwritten") std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(seen, "overwritten");
}

TEST(Store, GetWithoutLimitWaitsToo) {
  auto server = start_server();
  auto waiter = connect_to(*server);
  auto setter = connect_to(*server);
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    setter->set("k", bytes_of("x"));
  });
  EXPECT_EQ(string_of(waiter->get("k", Millis(-1))), "x");
  t.join();
}

TEST(Store, GetTimeoutThrowsTimeoutNamingTheKeyAndStaysUsable) {
  auto server = start_server();
  auto client = connect_to(*server);
  const auto start = Clock::now();
  auto e =
      expect_store_error([&] { client->get("run3/ag/7/2", 100ms); }, StoreError::Code::Timeout);
  const auto waited = Clock::now() - start;
  EXPECT_GE(waited, 95ms);
  EXPECT_LT(waited, 3s);
  EXPECT_NE(std::string(e.what()).find("'run3/ag/7/2'"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("100 ms"), std::string::npos) << e.what();
  EXPECT_EQ(e.missing_keys(), std::vector<std::string>{"run3/ag/7/2"});
  // The server answered the timeout, so the connection is still in step.
  client->set("after", bytes_of("ok"));
  EXPECT_EQ(string_of(client->get("after", 1s)), "ok");
  // A zero timeout is a non-blocking probe.
  expect_store_error([&] { client->get("absent", 0ms); }, StoreError::Code::Timeout);
}

TEST(Store, MultiGetReturnsValuesInOrderAndNamesOnlyMissingKeys) {
  auto server = start_server();
  auto client = connect_to(*server);
  auto setter = connect_to(*server);
  client->set("b", bytes_of("B"));
  std::thread t([&] {
    std::this_thread::sleep_for(50ms);
    setter->set("a", bytes_of("A"));
    setter->set("c", bytes_of("C"));
  });
  auto values = client->multi_get({"c", "a", "b"}, 5s);
  t.join();
  ASSERT_EQ(values.size(), 3u);
  EXPECT_EQ(string_of(values[0]), "C");
  EXPECT_EQ(string_of(values[1]), "A");
  EXPECT_EQ(string_of(values[2]), "B");
  EXPECT_TRUE(client->multi_get({}, 1s).empty());

  auto e = expect_store_error(
      [&] {
        client->multi_get({"a", "x", "b", "y"}, 100ms);
      },
      StoreError::Code::Timeout);
  EXPECT_EQ(e.missing_keys(), (std::vector<std::string>{"x", "y"}));
  EXPECT_NE(std::string(e.what()).find("2 of 4 keys"), std::string::npos) << e.what();
}

TEST(Store, MultiGetEachHandsOutValuesInOrderWithoutCopies) {
  auto server = start_server();
  auto client = connect_to(*server);
  client->set("x", bytes_of("xx"));
  client->set("y", bytes_of("y"));
  std::vector<std::string> seen;
  client->multi_get_each({"y", "x", "y"}, 1s, [&](size_t i, const uint8_t* data, size_t size) {
    seen.push_back(std::to_string(i) + "=" +
                   std::string(reinterpret_cast<const char*>(data), size));
  });
  EXPECT_EQ(seen, (std::vector<std::string>{"0=y", "1=xx", "2=y"}));
  auto e = expect_store_error(
      [&] {
        client->multi_get_each({"x", "nope"}, 50ms, [](size_t, const uint8_t*, size_t) {});
      },
      StoreError::Code::Timeout);
  EXPECT_EQ(e.missing_keys(), std::vector<std::string>{"nope"});
}

// Only multi_get is implemented: multi_get_each must fall back to it (for fakes in other tests).
class MultiGetOnlyClient : public StoreClient {
 public:
  void set(const std::string&, const Bytes&) override {}
  Bytes get(const std::string&, Millis) override { return {}; }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Millis) override {
    std::vector<Bytes> out;
    for (const auto& k : keys) out.push_back(bytes_of(k + "!"));
    return out;
  }
  int64_t add(const std::string&, int64_t) override { return 0; }
  bool check(const std::string&) override { return false; }
  size_t delete_prefix(const std::string&) override { return 0; }
};

TEST(Store, MultiGetEachDefaultsToMultiGet) {
  MultiGetOnlyClient client;
  std::string joined;
  client.multi_get_each({"a", "b"}, 1s, [&](size_t i, const uint8_t* data, size_t size) {
    joined += std::to_string(i) + std::string(reinterpret_cast<const char*>(data), size);
  });
  EXPECT_EQ(joined, "0a!1b!");
}

TEST(Store, AddFromManyThreadsIsAtomic) {
  auto server = start_server();
  constexpr int kThreads = 8, kAddsEach = 200;
  std::vector<std::vector<int64_t>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto client = connect_to(*server);
      for (int i = 0; i < kAddsEach; ++i) seen[t].push_back(client->add("counter", 1));
    });
  }
  for (auto& t : threads) t.join();
  // Every ADD returned a distinct value, and together they are exactly 1..N.
  std::set<int64_t> all;
  for (const auto& v : seen) all.insert(v.begin(), v.end());
  EXPECT_EQ(all.size(), size_t(kThreads * kAddsEach));
  EXPECT_EQ(*all.begin(), 1);
  EXPECT_EQ(*all.rbegin(), kThreads * kAddsEach);
  auto client = connect_to(*server);
  EXPECT_EQ(client->add("counter", -10), kThreads * kAddsEach - 10);
}

TEST(Store, AddOnANonCounterIsRefusedButTheClientStaysUsable) {
  auto server = start_server();
  auto client = connect_to(*server);
  client->set("text", bytes_of("hello"));
  auto e = expect_store_error([&] { client->add("text", 1); }, StoreError::Code::Protocol);
  EXPECT_NE(std::string(e.what()).find("not an 8-byte counter"), std::string::npos) << e.what();
  EXPECT_EQ(client->add("n", 3), 3);
}

TEST(Store, CheckAndDeletePrefix) {
  auto server = start_server();
  auto client = connect_to(*server);
  EXPECT_FALSE(client->check("run1/a"));
  for (const char* k : {"run1/a", "run1/b", "run10/a", "run2/a"}) client->set(k, {});
  EXPECT_TRUE(client->check("run1/a"));
  EXPECT_EQ(server->key_count(), 4u);
  EXPECT_EQ(client->delete_prefix("run1/"), 2u);
  EXPECT_FALSE(client->check("run1/a"));
  EXPECT_TRUE(client->check("run10/a"));
  EXPECT_EQ(server->key_count(), 2u);
  EXPECT_EQ(client->delete_prefix("run1/"), 0u);
}

TEST(Store, LargeValuesSurvivePartialReadsAndWrites) {
  auto server = start_server();
  auto writer = connect_to(*server);
  auto reader = connect_to(*server);
  Bytes big(8u << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 131 + (i >> 16));
  writer->set("big", big);
  EXPECT_EQ(reader->get("big", 5s), big);
  auto values = reader->multi_get({"big", "big"}, 5s);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[1], big);
}

TEST(Store, RepliesOfEverySizeArriveWholeAndTheClientGoesOnWorking) {
  // The client's reply buffer grows while a reply arrives and is released after a large one;
  // small calls right after large replies must still read their own reply, not stale bytes.
  auto server = start_server();
  auto client = connect_to(*server);
  // A GET's value is read straight into the result once its reply's 9-byte head is in: 4087
  // bytes end exactly with the first 4096-byte read, 4088 need a second one, and 20 MiB grow the
  // result in 16 MiB steps (never more than that beyond what arrived).
  for (size_t size : {size_t{100}, size_t{4087}, size_t{4088}, size_t{64 * 1024 - 1}, size_t{64 * 1024},
                      size_t{3u << 20}, size_t{20u << 20}, size_t{0}, size_t{7}}) {
    Bytes value(size);
    for (size_t i = 0; i < size; ++i) value[i] = static_cast<uint8_t>(i * 7 + size);
    const std::string key = "v" + std::to_string(size);
    client->set(key, value);
    EXPECT_EQ(client->get(key, 5s), value) << size << " bytes";
    const int64_t n = client->add("n", 1);  // a small reply right after the large one
    EXPECT_EQ(client->get("n", 1s)[0], static_cast<uint8_t>(n));
  }
  EXPECT_TRUE(client->check("v7"));
}

TEST(Store, AValueDeletedWhileItsReplyIsSentStillArrivesWhole) {
  // GET replies send the stored value itself, not a copy: deleting the key (the last reader of
  // a host's table does) while another reader's reply is still being written must not free it.
  auto server = start_server();
  auto writer = connect_to(*server);
  Bytes value(24u << 20);
  for (size_t i = 0; i < value.size(); ++i) value[i] = static_cast<uint8_t>(i * 131 + (i >> 12));
  int arrived = 0;
  for (int round = 0; round < 6; ++round) {
    const std::string key = "t/" + std::to_string(round);
    writer->set(key, value);
    std::promise<void> asking;
    Bytes got;
    std::thread reader([&] {
      auto client = connect_to(*server);
      asking.set_value();
      try {
        got = client->get(key, 1s);
      } catch (const StoreError& e) {
        EXPECT_EQ(e.code(), StoreError::Code::Timeout) << e.what();  // the delete came first
      }
    });
    asking.get_future().wait();
    // 24 MiB take milliseconds through loopback: vary where in the send the delete lands.
    std::this_thread::sleep_for(std::chrono::microseconds(500 * round));
    writer->delete_prefix("t/");
    reader.join();
    if (got.empty()) continue;
    ++arrived;
    EXPECT_TRUE(got == value) << "round " << round;
  }
  EXPECT_GT(arrived, 0) << "every delete overtook its GET, so nothing was tested";
  EXPECT_EQ(server->key_count(), 0u);
}

TEST(Store, ConnectRetriesUntilTheServerStarts) {
  // Learn a free port, release it, and start the real server there a little later.
  uint16_t port;
  {
    auto probe = start_server();
    port = probe->port();
  }
  std::unique_ptr<StoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(200ms);
    StoreServerOptions opts;
    opts.port = port;
    server = StoreServer::start(opts);
  });
  auto client = StoreClient::connect("127.0.0.1", port, 10s);
  starter.join();
  client->set("k", bytes_of("v"));
  EXPECT_EQ(string_of(client->get("k", 1s)), "v");
}

TEST(Store, ConnectGivesUpWithTheEndpointInTheMessage) {
  uint16_t port;
  {
    auto probe = start_server();
    port = probe->port();
  }
  const auto start = Clock::now();
  auto e = expect_store_error([&] { StoreClient::connect("127.0.0.1", port, 200ms); },
                              StoreError::Code::Connection);
  EXPECT_LT(Clock::now() - start, 3s);
  EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << e.what();
}

TEST(Store, StartingOnAPortInUseSaysWhatToDo) {
  auto first = start_server();
  StoreServerOptions opts;
  opts.port = first->port();
  auto e = expect_store_error([&] { StoreServer::start(opts); }, StoreError::Code::Connection);
  EXPECT_NE(
      std::string(e.what()).find("cannot listen on 127.0.0.1:" + std::to_string(first->port())),
      std::string::npos)
      << e.what();
  EXPECT_NE(std::string(e.what()).find("pick another port"), std::string::npos) << e.what();
  EXPECT_EQ(e.listen_problem(), StoreError::ListenProblem::PortInUse);
}

TEST(Store, StoppingTheServerWakesAWaitingClientWithConnectionError) {
  auto server = start_server();
  auto client = connect_to(*server);
  const std::string endpoint = "127.0.0.1:" + std::to_string(server->port());
  std::thread stopper([&] {
    std::this_thread::sleep_for(100ms);
    server->stop();
  });
  const auto start = Clock::now();
  auto e = expect_store_error([&] { client->get("never", 30s); }, StoreError::Code::Connection);
  stopper.join();
  EXPECT_LT(Clock::now() - start, 5s);  // not a hang until the 30 s timeout
  EXPECT_NE(std::string(e.what()).find(endpoint), std::string::npos) << e.what();
  // The broken client refuses further use with a Connection error too.
  expect_store_error([&] { client->set("k", {}); }, StoreError::Code::Connection);
}

TEST(Store, OversizedValueClosesOnlyThatConnection) {
  CapturedLog log;
  auto server = start_server(&log, "", /*max_message_bytes=*/4096);
  auto bystander = connect_to(*server);
  auto offender = connect_to(*server);
  bystander->set("k", bytes_of("fine"));
  expect_store_error([&] { offender->set("huge", Bytes(8192)); }, StoreError::Code::Connection);
  EXPECT_TRUE(log.contains("exceeds the limit of 4096")) << "the cut-off is logged";
  EXPECT_EQ(string_of(bystander->get("k", 1s)), "fine");
  EXPECT_FALSE(bystander->check("huge"));
}

TEST(Store, OversizedReplyBecomesAnErrorNotAHugeBuffer) {
  auto server = start_server(nullptr, "", /*max_message_bytes=*/4096);
  auto client = connect_to(*server);
  client->set("a", Bytes(3000));
  auto e = expect_store_error(
      [&] {
        client->multi_get({"a", "a"}, 1s);
      },
      StoreError::Code::Protocol);
  EXPECT_NE(std::string(e.what()).find("fetch fewer"), std::string::npos) << e.what();
  EXPECT_EQ(client->get("a", 1s).size(), 3000u);  // still usable
}

}  // namespace
}  // namespace commbench
