#include "memory_channel.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend::test {

void MemoryFabric::touch(int rank) {
  ++generation_[static_cast<size_t>(rank)];
  changed_[static_cast<size_t>(rank)].notify_all();
}

uint64_t MemoryFabric::deliver(const Key& key, std::vector<unsigned char> data) {
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = ++next_id_;
  mailbox_[key].push_back({id, std::move(data)});
  untaken_.emplace(id, key.src);
  touch(key.dst);
  return id;
}

bool MemoryFabric::pop(const Key& key, std::vector<unsigned char>& out) {
  auto it = mailbox_.find(key);
  if (it == mailbox_.end() || it->second.empty()) return false;
  out = std::move(it->second.front().data);
  const uint64_t id = it->second.front().id;
  it->second.pop_front();
  if (it->second.empty()) mailbox_.erase(it);
  untaken_.erase(id);
  touch(key.src);  // a rendezvous sender waits for this
  return true;
}

bool MemoryFabric::take(const Key& key, std::vector<unsigned char>& out,
                        std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool ready = changed_[static_cast<size_t>(key.dst)].wait_until(lock, deadline, [&] {
    if (aborted_) return true;
    auto it = mailbox_.find(key);
    return it != mailbox_.end() && !it->second.empty();
  });
  if (!ready) return false;
  if (!pop(key, out)) sdk::fail(CB_ERR_REMOTE, "rank " + std::to_string(key.dst) + ": gave up, another rank failed");
  return true;
}

bool MemoryFabric::try_take(const Key& key, std::vector<unsigned char>& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  return pop(key, out);
}

bool MemoryFabric::taken(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return untaken_.count(id) == 0;
}

uint64_t MemoryFabric::generation(int rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return generation_[static_cast<size_t>(rank)];
}

bool MemoryFabric::wait_for_change(int rank, uint64_t seen, std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool changed = changed_[static_cast<size_t>(rank)].wait_until(
      lock, deadline, [&] { return aborted_ || generation_[static_cast<size_t>(rank)] != seen; });
  if (aborted_) sdk::fail(CB_ERR_REMOTE, "rank " + std::to_string(rank) + ": gave up, another rank failed");
  return changed;
}

void MemoryFabric::abort() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
  }
  for (auto& cv : changed_) cv.notify_all();
}

std::vector<std::string> MemoryFabric::leftovers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [k, queue] : mailbox_)
    for (const auto& m : queue)
      out.push_back(std::to_string(k.src) + " -> " + std::to_string(k.dst) + ", collective " +
                    std::to_string(k.sequence) + ", step " + std::to_string(k.step) + ", " +
                    std::to_string(m.data.size()) + " bytes");
  return out;
}

std::string MemoryChannel::where(const Posted& p) const {
  return "rank " + std::to_string(rank_) + (p.is_send ? ": send to " : ": receive from ") +
         std::to_string(p.peer) + " at step " + std::to_string(p.step) + " (" + std::to_string(p.bytes) +
         " bytes)";
}

MemoryChannel::Ticket MemoryChannel::post(Posted p) {
  const std::string me = "rank " + std::to_string(rank_) + ": ";
  if (p.peer < 0 || p.peer >= size() || p.peer == rank_)
    sdk::fail(CB_ERR_INTERNAL, me + where(p) + ": invalid peer");
  if (p.bytes > 0 && p.buf == nullptr) sdk::fail(CB_ERR_INTERNAL, where(p) + ": a null buffer");
  auto overlap = [](const Posted& x, const Posted& y) {
    const auto* a = static_cast<const unsigned char*>(x.buf);
    const auto* b = static_cast<const unsigned char*>(y.buf);
    return x.bytes > 0 && y.bytes > 0 && a < b + y.bytes && b < a + x.bytes;
  };
  for (const Posted& q : posted_) {
    if (q.done) continue;
    // A receive may land while the other transfers in flight still read or write their buffers.
    if ((!p.is_send || !q.is_send) && overlap(p, q))
      sdk::fail(CB_ERR_INTERNAL, where(p) + " overlaps the buffer of the " + where(q) + ", still in flight");
    if (p.is_send == q.is_send && p.peer == q.peer && p.step == q.step)
      sdk::fail(CB_ERR_INTERNAL, where(p) + ": the " + where(q) + " with the same step is still in flight");
  }
  const auto* data = static_cast<const unsigned char*>(p.buf);
  if (p.bytes > 0) p.snapshot.assign(data, data + p.bytes);
  posted_.push_back(std::move(p));
  most_in_flight_ = std::max(most_in_flight_, ++in_flight_);
  return posted_.size() - 1;
}

MemoryChannel::Ticket MemoryChannel::post_send(int peer, uint32_t step, const void* buf, size_t bytes) {
  ++sent_;
  return post({true, peer, step & kStepMask, const_cast<void*>(buf), bytes, {}});
}

MemoryChannel::Ticket MemoryChannel::post_recv(int peer, uint32_t step, void* buf, size_t bytes) {
  return post({false, peer, step & kStepMask, buf, bytes, {}});
}

// Every send posted so far enters the fabric, with the data it had at post time: a peer waiting
// for it must not depend on which of this rank's transfers this rank waits for first.
void MemoryChannel::deliver_sends() {
  for (Posted& p : posted_) {
    if (!p.is_send || p.delivered) continue;
    p.delivered = true;
    p.message = fabric_.deliver({rank_, p.peer, sequence_, p.step}, p.snapshot);
  }
}

void MemoryChannel::complete(Posted& p, std::chrono::steady_clock::time_point deadline) {
  if (p.done) return;
  // Either way the buffer must still hold what it held at post: a send's may be read until now,
  // a receive's may be written until now (so what the algorithm wrote there would be lost).
  if (p.bytes > 0 && std::memcmp(p.buf, p.snapshot.data(), p.bytes) != 0)
    sdk::fail(CB_ERR_INTERNAL, where(p) + (p.is_send ? ": the buffer changed before the send completed"
                                                     : ": the buffer was written before the receive completed"));
  if (!p.is_send) {
    std::vector<unsigned char> data;
    if (!fabric_.take({p.peer, rank_, sequence_, p.step}, data, deadline))
      sdk::fail(CB_ERR_TIMEOUT, where(p) + ": no message within " + std::to_string(timeout_.count()) + " ms");
    if (data.size() != p.bytes)
      sdk::fail(CB_ERR_INTERNAL, where(p) + ": the message has " + std::to_string(data.size()) + " bytes");
    if (p.bytes > 0) std::memcpy(p.buf, data.data(), p.bytes);
  }
  p.done = true;
  --in_flight_;
}

// A receive's message lands in its buffer, which must still hold what it held at post.
void MemoryChannel::land(Posted& p, std::vector<unsigned char> data) {
  if (p.bytes > 0 && std::memcmp(p.buf, p.snapshot.data(), p.bytes) != 0)
    sdk::fail(CB_ERR_INTERNAL, where(p) + ": the buffer was written before the receive completed");
  if (data.size() != p.bytes)
    sdk::fail(CB_ERR_INTERNAL, where(p) + ": the message has " + std::to_string(data.size()) + " bytes");
  if (p.bytes > 0) std::memcpy(p.buf, data.data(), p.bytes);
  p.snapshot = std::move(data);  // from now on the algorithm must leave the message alone until it waits
  p.received = true;
}

void MemoryChannel::complete_rendezvous(const std::vector<size_t>& which,
                                        std::chrono::steady_clock::time_point deadline) {
  auto satisfied = [&](const Posted& p) { return p.done || (p.is_send ? fabric_.taken(p.message) : p.received); };
  for (;;) {
    const uint64_t seen = fabric_.generation(rank_);
    // Progress: every posted receive takes what has arrived for it, not only the awaited ones.
    for (Posted& p : posted_) {
      if (p.is_send || p.done || p.received) continue;
      std::vector<unsigned char> data;
      if (fabric_.try_take({p.peer, rank_, sequence_, p.step}, data)) land(p, std::move(data));
    }
    const Posted* pending = nullptr;
    for (size_t i : which)
      if (!satisfied(posted_[i])) {
        pending = &posted_[i];
        break;
      }
    if (pending == nullptr) break;
    if (!fabric_.wait_for_change(rank_, seen, deadline))
      sdk::fail(CB_ERR_TIMEOUT, where(*pending) + (pending->is_send ? ": not received by the peer within "
                                                                    : ": no message within ") +
                                    std::to_string(timeout_.count()) + " ms (rendezvous: a send completes only once its receiver has taken it)");
  }
  for (size_t i : which) {
    Posted& p = posted_[i];
    if (p.done) continue;
    if (p.bytes > 0 && std::memcmp(p.buf, p.snapshot.data(), p.bytes) != 0)
      sdk::fail(CB_ERR_INTERNAL, where(p) + (p.is_send ? ": the buffer changed before the send completed"
                                                       : ": the buffer was written before the receive completed"));
    p.done = true;
    --in_flight_;
  }
}

void MemoryChannel::wait(Ticket ticket) {
  if (ticket >= posted_.size()) sdk::fail(CB_ERR_INTERNAL, "rank " + std::to_string(rank_) + ": wait for a ticket never posted");
  deliver_sends();
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  if (fabric_.rendezvous()) complete_rendezvous({ticket}, deadline);
  else complete(posted_[ticket], deadline);
}

void MemoryChannel::wait_all() {
  deliver_sends();
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  if (fabric_.rendezvous()) {
    std::vector<size_t> all(posted_.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    complete_rendezvous(all, deadline);
  } else {
    for (Posted& p : posted_) complete(p, deadline);
  }
  posted_.clear();
}

void MemoryChannel::end() const {
  for (const Posted& p : posted_)
    if (!p.done) sdk::fail(CB_ERR_INTERNAL, where(p) + " was posted and never waited for");
}

}  // namespace commbench::ucx_backend::test
