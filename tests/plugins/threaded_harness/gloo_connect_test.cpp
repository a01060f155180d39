// The full-mesh connect seen from the host: the services it calls, that every pair reaches the
// right peer, and what a rank that never arrives does to the others.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "in_process_host.h"
#include "test_support.h"

namespace commbench::test {
namespace {

const cb_backend_api& gloo_api() { return load_plugin(gloo_plugin_path()); }

// gloo's own connectFullMesh reads world - 1 store keys per rank, each holding world - 1
// addresses: world³ addresses through the job's store. The plugin's connect must use the
// bootstrap allgather (which jobs route through the hosts' leaders) and never the store.
TEST(GlooConnect, FullMeshConnectsThroughTwoAllgathersAndNoStoreRequest) {
  constexpr int kWorld = 5;
  const cb_backend_api& plugin = gloo_api();
  InProcessHost host(kWorld);
  std::vector<const cb_host_services*> services;
  for (int rank = 0; rank < kWorld; ++rank) services.push_back(&host.services(rank, test_options()));
  std::mutex mutex;
  std::vector<std::string> failures;
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kWorld; ++rank)
    threads.emplace_back([&, rank] {
      try {
        RankSession session(plugin, *services[static_cast<size_t>(rank)]);
        // An alltoall uses every pair, each direction with its own payload: a pair connected to
        // the wrong peer's address would deliver the wrong block or none.
        std::vector<int32_t> in(kWorld), out(kWorld, -1), want(kWorld);
        for (int peer = 0; peer < kWorld; ++peer) {
          in[static_cast<size_t>(peer)] = 100 * rank + peer;
          want[static_cast<size_t>(peer)] = 100 * peer + rank;
        }
        const Status status = session.run(make_args(CB_OP_ALLTOALL, in.data(), out.data(), 1, CB_DTYPE_INT32));
        if (!status.ok() || out != want) throw std::runtime_error("alltoall after the connect: " + status.message);
        // No rank closes its pairs while a peer may still read from them.
        services[static_cast<size_t>(rank)]->bootstrap_barrier(services[static_cast<size_t>(rank)]->ctx, 60000);
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        failures.push_back("rank " + std::to_string(rank) + ": " + e.what());
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
  auto calls = host.calls();
  EXPECT_EQ(calls["kv_get"], 0);
  EXPECT_EQ(calls["kv_set"], 0);
  EXPECT_EQ(calls["bootstrap_broadcast"], 0);
  EXPECT_EQ(calls["bootstrap_allgather"], 2 * kWorld);  // the lists' lengths, then the lists
}

// A rank that never calls comm_create: the others' connect ends within comm_create's timeout,
// as a timeout that says what was awaited, not a hang or gloo's 300 s default.
TEST(GlooConnect, AMissingRankEndsTheConnectWithinItsTimeout) {
  constexpr int kWorld = 3, kTimeoutMs = 1500;
  const cb_backend_api& plugin = gloo_api();
  InProcessHost host(kWorld);
  std::vector<const cb_host_services*> services;
  for (int rank = 0; rank < kWorld; ++rank) services.push_back(&host.services(rank, test_options()));
  std::vector<Status> outcomes(kWorld - 1);
  std::vector<double> seconds(kWorld - 1);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kWorld - 1; ++rank)  // the last rank never arrives
    threads.emplace_back([&, rank] {
      cb_backend* backend = nullptr;
      Status& outcome = outcomes[static_cast<size_t>(rank)];
      outcome = to_status(plugin, plugin.init(services[static_cast<size_t>(rank)], &backend));
      if (!outcome.ok()) return;
      const auto start = std::chrono::steady_clock::now();
      cb_comm* comm = nullptr;
      outcome = to_status(plugin, plugin.comm_create(backend, kTimeoutMs, &comm));
      seconds[static_cast<size_t>(rank)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (comm != nullptr) to_status(plugin, plugin.comm_destroy(comm));
      to_status(plugin, plugin.finalize(backend));
    });
  for (std::thread& t : threads) t.join();
  for (int rank = 0; rank < kWorld - 1; ++rank) {
    const Status& outcome = outcomes[static_cast<size_t>(rank)];
    EXPECT_EQ(outcome.code, CB_ERR_TIMEOUT) << "rank " << rank << ": " << outcome.message;
    EXPECT_NE(outcome.message.find("did not reach comm_create"), std::string::npos) << outcome.message;
    EXPECT_NE(outcome.message.find("1500 ms"), std::string::npos) << outcome.message;
    EXPECT_LT(seconds[static_cast<size_t>(rank)], 30.0) << "rank " << rank;  // far below gloo's 300 s
  }
}

}  // namespace
}  // namespace commbench::test
