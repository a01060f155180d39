// Ranks as threads for the bootstrap tests: each rank its own client of the job's store over a
// real socket, as each worker is a process with its own.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/collectives.h"
#include "test_store_helpers.h"

namespace commbench::test {

// Runs body(bootstrap) on `world` threads, one rank each; returns the first failure message.
inline std::string run_ranks(const StoreServer& server, int world, const std::string& prefix,
                      const std::function<void(Bootstrap&)>& body) {
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto client = connect_to(server);
        Bootstrap bootstrap(*client, prefix, r, world);
        body(bootstrap);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = "rank " + std::to_string(r) + ": " + e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (!e.empty()) return e;
  }
  return "";
}

// `host_of(r)` for every rank; hosts are numbered by their lowest rank, as the agents number them.
inline std::vector<HostLayout> layouts(int world, const std::function<int(int)>& host_of) {
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

// A client of the job's store that counts the requests made through it, so that a test can tell
// which collectives went to the job's store and which to the hosts' leaders.
class CountingClient : public StoreClient {
 public:
  CountingClient(std::unique_ptr<StoreClient> inner, std::atomic<int>& calls) : inner_(std::move(inner)), calls_(calls) {}
  void set(const std::string& key, const Bytes& value) override { ++calls_, inner_->set(key, value); }
  Bytes get(const std::string& key, Millis timeout) override { return ++calls_, inner_->get(key, timeout); }
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys, Millis timeout) override {
    return ++calls_, inner_->multi_get(keys, timeout);
  }
  void multi_get_each(const std::vector<std::string>& keys, Millis timeout, const ValueSink& sink) override {
    ++calls_, inner_->multi_get_each(keys, timeout, sink);
  }
  int64_t add(const std::string& key, int64_t delta) override { return ++calls_, inner_->add(key, delta); }
  bool check(const std::string& key) override { return ++calls_, inner_->check(key); }
  size_t delete_prefix(const std::string& prefix) override { return ++calls_, inner_->delete_prefix(prefix); }
  std::string local_address() const override { return inner_->local_address(); }

 private:
  std::unique_ptr<StoreClient> inner_;
  std::atomic<int>& calls_;
};

// Runs body(bootstrap, rank) on one thread per rank (skipping `absent`), every collective routed
// through hosts; returns each rank's first error ("" when none). `job_calls`, when given, gets
// each rank's number of requests to the job's store.
inline std::vector<std::string> run_ranks(StoreServer& job, const std::string& token, int world,
                                   const std::function<int(int)>& host_of,
                                   const std::function<void(Bootstrap&, int)>& body, int absent = -1,
                                   std::vector<int>* job_calls = nullptr, bool route = true) {
  const auto layout = layouts(world, host_of);
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::vector<std::atomic<int>> calls(static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    if (r == absent) continue;
    threads.emplace_back([&, r] {
      try {
        CountingClient client(connect_to(job, token), calls[static_cast<size_t>(r)]);
        Bootstrap b(client, "exec0", r, world);
        if (route) b.route_through_hosts(layout[static_cast<size_t>(r)], token);
        body(b, r);
        b.close(std::chrono::milliseconds(10000));
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  if (job_calls)
    for (const auto& c : calls) job_calls->push_back(c.load());
  return errors;
}

// Hosts {0,2} and {1,3}; rank 2 never calls. `collective(b, r, timeout)` on the others; each
// rank's error, and the ranks each recorded as missing.
struct WithoutRank2 {
  std::vector<std::string> errors;
  std::vector<std::vector<int>> missing = std::vector<std::vector<int>>(4);  // what each rank recorded
};
inline WithoutRank2 run_without_rank_2(const std::function<void(Bootstrap&, int, Millis)>& collective,
                                Millis timeout = std::chrono::milliseconds(1500)) {
  auto job = start_server(nullptr, "t");
  std::mutex m;
  WithoutRank2 out;
  out.errors = run_ranks(
      *job, "t", 4, [](int r) { return r % 2; },
      [&](Bootstrap& b, int r) {
        std::vector<int> missing;
        b.record_missing_ranks_in(&missing);
        try {
          collective(b, r, timeout);
        } catch (...) {
          std::lock_guard<std::mutex> lock(m);
          out.missing[static_cast<size_t>(r)] = missing;
          throw;
        }
      },
      /*absent=*/2);
  return out;
}

}  // namespace commbench::test
