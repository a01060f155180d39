// The store's contents and its parked waiters, with no I/O: the server's event loop feeds
// requests in and learns which waiters became ready or expired. Kept apart from the sockets so
// the waiting logic can be tested without a network. Not thread-safe (one event loop owns it).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace commbench {

class StoreState {
 public:
  using Clock = std::chrono::steady_clock;
  using WaiterId = uint64_t;
  using Bytes = std::vector<uint8_t>;
  // Values are shared, immutable buffers: a GET reply sends the stored bytes themselves, and a
  // DELETE_PREFIX while a reply is being written must not free them under it.
  using Value = std::shared_ptr<const Bytes>;

  const Bytes* find(std::string_view key) const;
  Value find_shared(std::string_view key) const;
  size_t key_count() const { return data_.size(); }

  // Stores (or overwrites) a value. Waiters whose last missing key this was are appended to
  // `woken`; they stay parked until take().
  void set(const std::string& key, Bytes value, std::vector<WaiterId>& woken);
  void set_shared(const std::string& key, Value value, std::vector<WaiterId>& woken);

  // Adds `delta` to the 8-byte counter at `key` (missing = 0) and returns the new value, or
  // nullopt when the key holds a value that is not a counter (then nothing changes).
  std::optional<int64_t> add(const std::string& key, int64_t delta, std::vector<WaiterId>& woken);

  // Erases every key starting with `prefix`; returns how many. Scans every key: the store holds
  // only the keys of collectives in flight, and lookups (millions per large allgather) matter
  // far more than this.
  size_t erase_prefix(std::string_view prefix);

  // Indices (into `keys`) of the keys that do not exist now.
  std::vector<uint32_t> missing(const std::vector<std::string>& keys) const;
  // One lookup per key: fills `values` (pointers valid until the next change) and returns true
  // when every key exists.
  bool find_all(const std::vector<std::string>& keys, std::vector<const Bytes*>& values) const;

  // Parks `id` until every key in `keys` exists or `deadline` passes (Clock::time_point::max()
  // = never). `id` must not be parked already.
  void park(WaiterId id, std::vector<std::string> keys, Clock::time_point deadline);
  // Unparks `id` and hands its keys back (empty when `id` is not parked). Used both for woken
  // waiters, which must re-check missing() since a key may have been deleted in between, and
  // for expired ones.
  std::vector<std::string> take(WaiterId id);
  // Forgets `id` (its connection closed). No-op when it is not parked.
  void cancel(WaiterId id) { take(id); }

  // Parked waiters whose deadline is at or before `now`, earliest first.
  std::vector<WaiterId> expired(Clock::time_point now) const;
  // The earliest finite deadline of any parked waiter.
  std::optional<Clock::time_point> next_deadline() const;
  size_t parked_count() const { return waiters_.size(); }
  // Keys some waiter is waiting for (for tests: must drain back to zero).
  size_t watched_key_count() const { return watchers_.size(); }

 private:
  struct Waiter {
    std::vector<std::string> keys;
    size_t missing = 0;  // registrations in watchers_ not yet satisfied
    Clock::time_point deadline;
  };

  void wake_watchers(const std::string& key, std::vector<WaiterId>& woken);

  // Hash lookups: an allgather over 1024 ranks makes a million of them, and an ordered map's
  // string comparisons over keys sharing a long prefix cost ten times more.
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Value, StringHash, std::equal_to<>> data_;  // never null
  std::unordered_map<WaiterId, Waiter> waiters_;
  std::unordered_map<std::string, std::vector<WaiterId>> watchers_;  // missing key -> waiters
  std::set<std::pair<Clock::time_point, WaiterId>> deadlines_;
};

}  // namespace commbench
