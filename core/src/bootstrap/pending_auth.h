// The store's clients that have not authenticated yet, and the limits on them (docs/bootstrap.md,
// "Limits"): how many at once, by when each must have authenticated, and which may be pushed out
// when the cap is reached. Bookkeeping only: the server closes the connections it names.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "bootstrap/server_connection.h"

namespace commbench {

class PendingAuthentications {
 public:
  using Clock = std::chrono::steady_clock;
  // How long a client may take to authenticate before a newer one may push it out (only when
  // `cap` are authenticating at once).
  static constexpr std::chrono::milliseconds kEvictionGrace{1000};
  // `still_pending(id)`: whether connection `id` is open and has not authenticated.
  PendingAuthentications(size_t cap, std::chrono::milliseconds timeout, std::function<bool(ConnId)> still_pending);

  void add(ConnId id);  // accepted now
  void left(ConnId id);  // authenticated, or closed before it did (the count only)
  size_t count() const { return count_; }
  bool full() const { return count_ >= cap_; }
  // The oldest still pending once it has had kEvictionGrace; removed from the queue (the caller
  // closes it, which calls left()).
  std::optional<ConnId> take_evictable();
  // Whether one could be taken now (for polling the listener).
  bool evictable();
  // Those whose authentication deadline passed; removed from the queue.
  std::vector<ConnId> take_expired();
  // When the next deadline or eviction grace ends; nullopt when nothing is pending.
  std::optional<Clock::time_point> next_wakeup() const;

 private:
  void drop_settled();  // front entries that authenticated or closed

  size_t cap_;
  std::chrono::milliseconds timeout_;
  std::function<bool(ConnId)> still_pending_;
  size_t count_ = 0;
  // By deadline; all share one timeout, so accept order is deadline order.
  std::deque<std::pair<Clock::time_point, ConnId>> queue_;
};

}  // namespace commbench
