// An in-memory Channel for N threads of one process: what the collective algorithms are tested
// over, for any world size, without UCX. Sends are eager (copied at post). wait_all() fails
// with CB_ERR_TIMEOUT instead of hanging, and a receive whose size differs from the message's
// fails, like UCX's truncation, so a broken algorithm fails its test.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include "collectives/channel.h"

namespace commbench::ucx_backend::testing {

class MemoryFabric {
 public:
  explicit MemoryFabric(int size) : size_(size) {}
  int size() const { return size_; }

  using Key = std::tuple<int, int, uint32_t, uint32_t>;  // src, dst, sequence, step
  void deliver(const Key& key, std::vector<unsigned char> data);
  // Waits until a message for `key` is there, or the deadline; nullopt on timeout.
  bool take(const Key& key, std::vector<unsigned char>& out, std::chrono::steady_clock::time_point deadline);
  // Messages nobody received (an algorithm that sends more than it receives leaves some).
  size_t leftovers() const;

 private:
  int size_;
  mutable std::mutex mutex_;
  std::condition_variable arrived_;
  std::map<Key, std::deque<std::vector<unsigned char>>> mailbox_;
};

class MemoryChannel final : public Channel {
 public:
  MemoryChannel(MemoryFabric& fabric, int rank,
                std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : fabric_(fabric), rank_(rank), timeout_(timeout) {}
  void begin() { ++sequence_; }  // one collective
  int rank() const override { return rank_; }
  int size() const override { return fabric_.size(); }
  void post_send(int peer, uint32_t step, const void* buf, size_t bytes) override;
  void post_recv(int peer, uint32_t step, void* buf, size_t bytes) override;
  void wait_all() override;
  size_t messages_sent() const { return sent_; }

 private:
  struct PendingRecv {
    int peer;
    uint32_t step;
    void* buf;
    size_t bytes;
  };
  MemoryFabric& fabric_;
  int rank_;
  std::chrono::milliseconds timeout_;
  uint32_t sequence_ = 0;
  size_t sent_ = 0;
  std::vector<PendingRecv> pending_;
};

}  // namespace commbench::ucx_backend::testing
