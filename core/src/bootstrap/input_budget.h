// The store's bound on unparsed input over all connections (docs/bootstrap.md, "Limits"): below
// the total every connection reads; past it one connection at a time (the reader) goes on until
// its message completes, and the others wait, unread, in their sockets. Without deadlock: the
// reader's message always completes, and the total is exceeded by at most one message.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <unordered_set>
#include <vector>

#include "bootstrap/server_connection.h"

namespace commbench {

class InputBudget {
 public:
  explicit InputBudget(size_t total) : total_(total) {}

  void add(size_t bytes) { held_ += bytes; }
  void remove(size_t bytes) { held_ -= bytes; }
  size_t held() const { return held_; }

  // Whether connection `id` may read now (`open(id)`: whether a connection still exists). A
  // connection told no is remembered until take_waiting().
  bool may_read(ConnId id, const std::function<bool(ConnId)>& open) {
    if (held_ < total_) return true;
    if (!reader_ || !open(*reader_)) reader_ = id;
    if (*reader_ == id) return true;
    waiting_.insert(id);
    return false;
  }
  // `id` completed a message or closed: another connection may become the reader.
  void done(ConnId id) {
    if (reader_ == id) reader_.reset();
  }
  // The connections to look at again once the total drained or the reader finished.
  std::vector<ConnId> take_waiting(const std::function<bool(ConnId)>& open) {
    if (waiting_.empty() || (held_ >= total_ && reader_ && open(*reader_))) return {};
    std::vector<ConnId> out(waiting_.begin(), waiting_.end());
    waiting_.clear();
    return out;
  }

 private:
  size_t total_;
  size_t held_ = 0;
  std::optional<ConnId> reader_;
  std::unordered_set<ConnId> waiting_;
};

}  // namespace commbench
