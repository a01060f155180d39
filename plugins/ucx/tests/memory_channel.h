// An in-memory Channel for N threads of one process: what the collective algorithms are tested
// over, for any world size, without UCX. It is stricter than UCX, so that an algorithm that
// works here by luck fails here rather than on a cluster:
//  - a receive must name the exact size of the message it matches (UCX truncates or errs);
//  - a send buffer must not change between post and its completion (wait() of its ticket or
//    wait_all(): UCX may read it any time before), and a receive buffer must not be written by
//    the algorithm before its completion (UCX writes it any time before);
//  - a receive buffer must not overlap the buffer of any transfer still in flight;
//  - two transfers in flight between one pair must not share a step; steps keep 12 bits (tags);
//  - wait()/wait_all() throw CB_ERR_TIMEOUT instead of hanging, and CB_ERR_REMOTE once another
//    rank failed (MemoryFabric::abort), so a broken algorithm fails its test quickly;
//  - messages nobody received are listed by MemoryFabric::leftovers(), and end() fails for
//    transfers posted but never waited for.
// Sends are delivered by their sender's next wait() or wait_all(), so a rank can finish a round
// before its peer starts its own (tests use that to stay single-threaded).
//
// With a rendezvous fabric (one thread per rank), a send also completes only once its receiver
// has taken it, as UCX's rendezvous protocol does for large messages: a sender's wait blocks
// until the peer has posted the matching receive and made progress. While a rank waits for
// anything, its posted receives take whatever has arrived for them, as ucp_worker_progress
// completes every matched receive. An algorithm whose ranks can all end up waiting for sends
// that nobody receives (a cycle that buffered sends hide) times out here, not on a cluster.
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
  explicit MemoryFabric(int size, bool rendezvous = false)
      : size_(size), rendezvous_(rendezvous), changed_(static_cast<size_t>(size)),
        generation_(static_cast<size_t>(size)) {}
  int size() const { return size_; }
  bool rendezvous() const { return rendezvous_; }

  struct Key {
    int src;
    int dst;
    uint32_t sequence;  // which collective
    uint32_t step;
    auto operator<=>(const Key&) const = default;
  };
  // Returns the message's id (for taken()).
  uint64_t deliver(const Key& key, std::vector<unsigned char> data);
  // The oldest message under `key` (FIFO, like UCP between one pair and tag). False when the
  // deadline passes first; throws PluginError(CB_ERR_REMOTE) once the fabric is aborted.
  bool take(const Key& key, std::vector<unsigned char>& out, std::chrono::steady_clock::time_point deadline);
  // take() without waiting.
  bool try_take(const Key& key, std::vector<unsigned char>& out);
  bool taken(uint64_t id) const;
  // What a rank's waits sleep on: its generation grows when a message for it arrives or one of
  // its messages is taken. wait_for_change returns false when the deadline passes first.
  uint64_t generation(int rank) const;
  bool wait_for_change(int rank, uint64_t seen, std::chrono::steady_clock::time_point deadline);
  // A rank failed: wake every waiting rank with an error instead of letting it time out.
  void abort();
  // Messages nobody received, one description each ("0 -> 1, collective 2, step 3, 8 bytes").
  std::vector<std::string> leftovers() const;

 private:
  struct Message {
    uint64_t id;
    std::vector<unsigned char> data;
  };
  bool pop(const Key& key, std::vector<unsigned char>& out);  // under mutex_
  void touch(int rank);                                        // under mutex_

  int size_;
  bool rendezvous_;
  mutable std::mutex mutex_;
  std::vector<std::condition_variable> changed_;  // one per rank: no thundering herd
  std::vector<uint64_t> generation_;
  bool aborted_ = false;
  uint64_t next_id_ = 0;
  std::map<Key, std::deque<Message>> mailbox_;
  std::map<uint64_t, int> untaken_;  // message id -> its sender
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
  Ticket post_send(int peer, uint32_t step, const void* buf, size_t bytes) override;
  Ticket post_recv(int peer, uint32_t step, void* buf, size_t bytes) override;
  void wait(Ticket ticket) override;
  void wait_all() override;

  size_t messages_sent() const { return sent_; }
  // The most transfers one round has had in flight at once (tests of the pipelines' windows).
  size_t most_in_flight() const { return most_in_flight_; }

 private:
  struct Posted {
    bool is_send;
    int peer;
    uint32_t step;
    void* buf;  // a send's buffer is only read
    size_t bytes;
    // The buffer at post time: what a send delivers; a receive's buffer must hold it until the
    // message lands, and the message from then on.
    std::vector<unsigned char> snapshot;
    bool delivered = false;  // sends: in the fabric
    uint64_t message = 0;    // sends: the fabric's id of the delivered message
    bool received = false;   // receives (rendezvous fabric): the message has landed
    bool done = false;
  };
  Ticket post(Posted p);
  void deliver_sends();
  void complete(Posted& p, std::chrono::steady_clock::time_point deadline);
  // Rendezvous fabric: waits until every transfer in `which` has landed (receives) or been taken
  // (sends), landing any other posted receive's message meanwhile, then completes them.
  void complete_rendezvous(const std::vector<size_t>& which, std::chrono::steady_clock::time_point deadline);
  void land(Posted& p, std::vector<unsigned char> data);
  std::string where(const Posted& p) const;

  MemoryFabric& fabric_;
  int rank_;
  std::chrono::milliseconds timeout_;
  uint32_t sequence_ = 0;
  size_t sent_ = 0;
  size_t in_flight_ = 0;
  size_t most_in_flight_ = 0;
  std::vector<Posted> posted_;
};

}  // namespace commbench::ucx_backend::test
