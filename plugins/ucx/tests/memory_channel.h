// An in-memory Channel for N threads of one process: what the collective algorithms are tested
// over, for any world size, without UCX. It is stricter than UCX, so that an algorithm that
// works here by luck fails here rather than on a cluster:
//  - a receive must name the exact size of the message it matches (UCX truncates or errs);
//  - a send buffer must not change between post and wait_all() (UCX may read it any time);
//  - a receive buffer must not overlap any other buffer posted in the same round;
//  - at most 2n+8 transfers per round (what UcpChannel reserves), steps keep 12 bits (its tags);
//  - wait_all() throws CB_ERR_TIMEOUT instead of hanging, and CB_ERR_REMOTE once another rank
//    failed (MemoryFabric::abort), so a broken algorithm fails its test quickly;
//  - messages nobody received are listed by MemoryFabric::leftovers(), and end() fails for
//    transfers posted but never waited for.
#pragma once

#include <chrono>
#include <compare>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "collectives/channel.h"

namespace commbench::ucx_backend::test {

// The mailboxes shared by the ranks of one test.
class MemoryFabric {
 public:
  explicit MemoryFabric(int size) : size_(size), arrived_(static_cast<size_t>(size)) {}
  int size() const { return size_; }

  struct Key {
    int src;
    int dst;
    uint32_t sequence;  // which collective
    uint32_t step;
    auto operator<=>(const Key&) const = default;
  };
  void deliver(const Key& key, std::vector<unsigned char> data);
  // The oldest message under `key` (FIFO, like UCP between one pair and tag). False when the
  // deadline passes first; throws PluginError(CB_ERR_REMOTE) once the fabric is aborted.
  bool take(const Key& key, std::vector<unsigned char>& out, std::chrono::steady_clock::time_point deadline);
  // A rank failed: wake every waiting rank with an error instead of letting it time out.
  void abort();
  // Messages nobody received, one description each ("0 -> 1, collective 2, step 3, 8 bytes").
  std::vector<std::string> leftovers() const;

 private:
  int size_;
  mutable std::mutex mutex_;
  std::vector<std::condition_variable> arrived_;  // one per receiving rank: no thundering herd
  bool aborted_ = false;
  std::map<Key, std::deque<std::vector<unsigned char>>> mailbox_;
};

class MemoryChannel final : public Channel {
 public:
  static constexpr uint32_t kStepMask = 0xFFF;  // tags.h keeps 12 bits of step

  MemoryChannel(MemoryFabric& fabric, int rank, std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : fabric_(fabric), rank_(rank), timeout_(timeout) {}

  // One collective: a new sequence number keeps its messages apart from the previous one's.
  void begin() { ++sequence_; }
  // Throws PluginError(CB_ERR_INTERNAL) when transfers were posted and never waited for.
  void end() const;

  int rank() const override { return rank_; }
  int size() const override { return fabric_.size(); }
  void post_send(int peer, uint32_t step, const void* buf, size_t bytes) override;
  void post_recv(int peer, uint32_t step, void* buf, size_t bytes) override;
  void wait_all() override;

  size_t messages_sent() const { return sent_; }

 private:
  struct Posted {
    bool is_send;
    int peer;
    uint32_t step;
    void* buf;  // a send's buffer is only read
    size_t bytes;
    std::vector<unsigned char> snapshot;  // sends: the data at post time
  };
  void check_post(const char* what, int peer, size_t bytes, const void* buf) const;
  void check_overlaps() const;
  std::string where(const Posted& p) const;

  MemoryFabric& fabric_;
  int rank_;
  std::chrono::milliseconds timeout_;
  uint32_t sequence_ = 0;
  size_t sent_ = 0;
  std::vector<Posted> posted_;
};

}  // namespace commbench::ucx_backend::test
