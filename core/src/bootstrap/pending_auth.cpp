#include "bootstrap/pending_auth.h"

namespace commbench {

PendingAuthentications::PendingAuthentications(size_t cap, std::chrono::milliseconds timeout,
                                               std::function<bool(ConnId)> still_pending)
    : cap_(cap), timeout_(timeout), still_pending_(std::move(still_pending)) {}

void PendingAuthentications::add(ConnId id) {
  ++count_;
  queue_.emplace_back(Clock::now() + timeout_, id);
}

void PendingAuthentications::left(ConnId) {
  if (count_ > 0) --count_;
}

void PendingAuthentications::drop_settled() {
  while (!queue_.empty() && !still_pending_(queue_.front().second)) queue_.pop_front();
}

bool PendingAuthentications::evictable() {
  drop_settled();
  return !queue_.empty() && queue_.front().first - timeout_ + kEvictionGrace <= Clock::now();
}

std::optional<ConnId> PendingAuthentications::take_evictable() {
  if (!evictable()) return std::nullopt;
  const ConnId id = queue_.front().second;
  queue_.pop_front();
  return id;
}

std::vector<ConnId> PendingAuthentications::take_expired() {
  std::vector<ConnId> out;
  const auto now = Clock::now();
  while (!queue_.empty() && queue_.front().first <= now) {
    if (still_pending_(queue_.front().second)) out.push_back(queue_.front().second);
    queue_.pop_front();
  }
  return out;
}

std::optional<PendingAuthentications::Clock::time_point> PendingAuthentications::next_wakeup() const {
  if (queue_.empty()) return std::nullopt;
  // The oldest expires at its deadline; at the cap it may be pushed out earlier.
  const auto deadline = queue_.front().first;
  const auto evictable_at = deadline - timeout_ + kEvictionGrace;
  return full() && evictable_at > Clock::now() ? evictable_at : deadline;
}

}  // namespace commbench
