#include "memory_channel.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend::test {

void MemoryFabric::deliver(const Key& key, std::vector<unsigned char> data) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mailbox_[key].push_back(std::move(data));
  }
  arrived_[static_cast<size_t>(key.dst)].notify_all();
}

bool MemoryFabric::take(const Key& key, std::vector<unsigned char>& out,
                        std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool ready = arrived_[static_cast<size_t>(key.dst)].wait_until(lock, deadline, [&] {
    if (aborted_) return true;
    auto it = mailbox_.find(key);
    return it != mailbox_.end() && !it->second.empty();
  });
  if (!ready) return false;
  auto it = mailbox_.find(key);
  if (it == mailbox_.end() || it->second.empty())
    sdk::fail(CB_ERR_REMOTE, "rank " + std::to_string(key.dst) + ": gave up, another rank failed");
  out = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) mailbox_.erase(it);
  return true;
}

void MemoryFabric::abort() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
  }
  for (auto& cv : arrived_) cv.notify_all();
}

std::vector<std::string> MemoryFabric::leftovers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [k, queue] : mailbox_)
    for (const auto& data : queue)
      out.push_back(std::to_string(k.src) + " -> " + std::to_string(k.dst) + ", collective " +
                    std::to_string(k.sequence) + ", step " + std::to_string(k.step) + ", " +
                    std::to_string(data.size()) + " bytes");
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
    fabric_.deliver({rank_, p.peer, sequence_, p.step}, p.snapshot);
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

void MemoryChannel::wait(Ticket ticket) {
  if (ticket >= posted_.size()) sdk::fail(CB_ERR_INTERNAL, "rank " + std::to_string(rank_) + ": wait for a ticket never posted");
  deliver_sends();
  complete(posted_[ticket], std::chrono::steady_clock::now() + timeout_);
}

void MemoryChannel::wait_all() {
  deliver_sends();
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (Posted& p : posted_) complete(p, deadline);
  posted_.clear();
}

void MemoryChannel::end() const {
  for (const Posted& p : posted_)
    if (!p.done) sdk::fail(CB_ERR_INTERNAL, where(p) + " was posted and never waited for");
}

}  // namespace commbench::ucx_backend::test
