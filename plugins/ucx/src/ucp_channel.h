// The collective algorithms' Channel over UCP tags: each collective gets the next sequence
// number (tags.h), its transfers are started at once and completed together by wait_all().
#pragma once

#include <vector>

#include "collectives/channel.h"
#include "collectives/eager_sends.h"
#include "transfers.h"

namespace commbench::ucx_backend {

class UcpChannel final : public Channel {
 public:
  UcpChannel(TagEngine& tags, int rank, int size) : tags_(tags), rank_(rank), size_(size) {
    // Room for what a lock-step round posts (pairwise: 2(n-1)); a pipeline posts more, and the
    // list then grows once, on the first such collective: later ones reuse its capacity, so
    // the timed loop (which repeats one size) does not allocate.
    pending_.reserve(2 * static_cast<size_t>(size) + 64);
  }
  ~UcpChannel() override;

  // Starts a collective: new sequence number, the deadline its waits share (one clock for all of
  // them: a timeout counts from the first wait that looks at the clock), and which of its sends
  // ask UCX for fast completion (eager_sends.h).
  void begin(Deadline deadline, EagerSends eager = {});
  // Drops whatever a failed collective left posted.
  void abandon();

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Ticket post_send(int peer, uint32_t step, const void* buf, size_t bytes) override;
  Ticket post_recv(int peer, uint32_t step, void* buf, size_t bytes) override;
  void wait(Ticket ticket) override;
  void wait_all() override;

 private:
  TagEngine& tags_;
  int rank_;
  int size_;
  uint32_t sequence_ = 0;
  Deadline deadline_ = Clock::time_point{};
  EagerSends eager_;
  std::vector<Transfer> pending_;
};

}  // namespace commbench::ucx_backend
