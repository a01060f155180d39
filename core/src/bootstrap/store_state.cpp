#include "bootstrap/store_state.h"

#include <algorithm>

#include "bootstrap/wire_protocol.h"

namespace commbench {

const StoreState::Bytes* StoreState::find(std::string_view key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : it->second.get();
}

StoreState::Value StoreState::find_shared(std::string_view key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : it->second;
}

void StoreState::set(const std::string& key, Bytes value, std::vector<WaiterId>& woken) {
  set_shared(key, std::make_shared<const Bytes>(std::move(value)), woken);
}

void StoreState::set_shared(const std::string& key, Value value, std::vector<WaiterId>& woken) {
  if (!value) value = std::make_shared<const Bytes>();
  data_.insert_or_assign(key, std::move(value));
  wake_watchers(key, woken);
}

std::optional<int64_t> StoreState::add(const std::string& key, int64_t delta,
                                       std::vector<WaiterId>& woken) {
  int64_t current = 0;
  if (const Bytes* v = find(key); v && !wire::decode_counter(*v, current)) return std::nullopt;
  // Unsigned arithmetic: wrap-around instead of undefined behaviour on overflow.
  const auto updated =
      static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
  set(key, wire::encode_counter(updated), woken);
  return updated;
}

size_t StoreState::erase_prefix(std::string_view prefix) {
  return std::erase_if(
      data_, [&](const auto& entry) { return std::string_view(entry.first).starts_with(prefix); });
}

std::vector<uint32_t> StoreState::missing(const std::vector<std::string>& keys) const {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!data_.contains(keys[i])) out.push_back(static_cast<uint32_t>(i));
  }
  return out;
}

bool StoreState::find_all(const std::vector<std::string>& keys,
                          std::vector<const Bytes*>& values) const {
  values.clear();
  values.reserve(keys.size());
  for (const auto& key : keys) {
    const Bytes* v = find(key);
    if (!v) return false;
    values.push_back(v);
  }
  return true;
}

void StoreState::park(WaiterId id, std::vector<std::string> keys, Clock::time_point deadline) {
  Waiter w;
  w.deadline = deadline;
  for (const auto& key : keys) {
    if (data_.contains(key)) continue;
    watchers_[key].push_back(id);
    ++w.missing;
  }
  w.keys = std::move(keys);
  deadlines_.emplace(deadline, id);
  waiters_.emplace(id, std::move(w));
}

std::vector<std::string> StoreState::take(WaiterId id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return {};
  Waiter w = std::move(it->second);
  waiters_.erase(it);
  deadlines_.erase({w.deadline, id});
  // A waiter that still misses keys is registered with their watcher lists; a woken one
  // (missing == 0) is not, so the common path skips this scan.
  for (size_t i = 0; w.missing > 0 && i < w.keys.size(); ++i) {
    auto watched = watchers_.find(w.keys[i]);
    if (watched == watchers_.end()) continue;
    auto& ids = watched->second;
    auto pos = std::find(ids.begin(), ids.end(), id);
    if (pos == ids.end()) continue;
    *pos = ids.back();
    ids.pop_back();
    --w.missing;
    if (ids.empty()) watchers_.erase(watched);
  }
  return std::move(w.keys);
}

std::vector<StoreState::WaiterId> StoreState::expired(Clock::time_point now) const {
  std::vector<WaiterId> out;
  for (const auto& [deadline, id] : deadlines_) {
    if (deadline > now) break;
    out.push_back(id);
  }
  return out;
}

std::optional<StoreState::Clock::time_point> StoreState::next_deadline() const {
  if (deadlines_.empty() || deadlines_.begin()->first == Clock::time_point::max()) {
    return std::nullopt;
  }
  return deadlines_.begin()->first;
}

void StoreState::wake_watchers(const std::string& key, std::vector<WaiterId>& woken) {
  auto watched = watchers_.find(key);
  if (watched == watchers_.end()) return;
  for (WaiterId id : watched->second) {
    auto it = waiters_.find(id);
    if (it != waiters_.end() && --it->second.missing == 0) woken.push_back(id);
  }
  watchers_.erase(watched);
}

}  // namespace commbench
