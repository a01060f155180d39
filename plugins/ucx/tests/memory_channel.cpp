#include "memory_channel.h"

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

void MemoryChannel::check_post(const char* what, int peer, size_t bytes, const void* buf) const {
  const std::string me = "rank " + std::to_string(rank_) + ": ";
  if (peer < 0 || peer >= size() || peer == rank_) sdk::fail(CB_ERR_INTERNAL, me + what + " invalid peer " + std::to_string(peer));
  if (bytes > 0 && buf == nullptr) sdk::fail(CB_ERR_INTERNAL, me + what + " a null buffer");
  if (posted_.size() >= 2 * static_cast<size_t>(size()) + 8)
    sdk::fail(CB_ERR_INTERNAL, me + "more transfers in one round than UcpChannel reserves");
}

void MemoryChannel::post_send(int peer, uint32_t step, const void* buf, size_t bytes) {
  check_post("send to", peer, bytes, buf);
  const auto* p = static_cast<const unsigned char*>(buf);
  posted_.push_back({true, peer, step & kStepMask, const_cast<void*>(buf), bytes,
                     bytes > 0 ? std::vector<unsigned char>(p, p + bytes) : std::vector<unsigned char>{}});
  ++sent_;
}

void MemoryChannel::post_recv(int peer, uint32_t step, void* buf, size_t bytes) {
  check_post("receive from", peer, bytes, buf);
  posted_.push_back({false, peer, step & kStepMask, buf, bytes, {}});
}

// A receive may land while the round's other transfers still read or write their buffers.
void MemoryChannel::check_overlaps() const {
  auto overlap = [](const Posted& x, const Posted& y) {
    const auto* a = static_cast<const unsigned char*>(x.buf);
    const auto* b = static_cast<const unsigned char*>(y.buf);
    return x.bytes > 0 && y.bytes > 0 && a < b + y.bytes && b < a + x.bytes;
  };
  for (size_t i = 0; i < posted_.size(); ++i)
    for (size_t j = 0; j < posted_.size(); ++j)
      if (i != j && !posted_[i].is_send && overlap(posted_[i], posted_[j]))
        sdk::fail(CB_ERR_INTERNAL, where(posted_[i]) + " overlaps the buffer of the " + where(posted_[j]));
}

void MemoryChannel::wait_all() {
  check_overlaps();
  std::vector<Posted> posted;
  posted.swap(posted_);
  // Sends are delivered here, not at post: a buffer changed in between is caught below.
  for (Posted& p : posted) {
    if (!p.is_send) continue;
    if (p.bytes > 0 && std::memcmp(p.buf, p.snapshot.data(), p.bytes) != 0)
      sdk::fail(CB_ERR_INTERNAL, where(p) + ": the buffer changed before wait_all()");
    fabric_.deliver({rank_, p.peer, sequence_, p.step}, std::move(p.snapshot));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (const Posted& p : posted) {
    if (p.is_send) continue;
    std::vector<unsigned char> data;
    if (!fabric_.take({p.peer, rank_, sequence_, p.step}, data, deadline))
      sdk::fail(CB_ERR_TIMEOUT, where(p) + ": no message within " + std::to_string(timeout_.count()) + " ms");
    if (data.size() != p.bytes)
      sdk::fail(CB_ERR_INTERNAL, where(p) + ": the message has " + std::to_string(data.size()) + " bytes");
    if (p.bytes > 0) std::memcpy(p.buf, data.data(), p.bytes);
  }
}

void MemoryChannel::end() const {
  if (!posted_.empty()) sdk::fail(CB_ERR_INTERNAL, where(posted_.front()) + " was posted and never waited for");
}

}  // namespace commbench::ucx_backend::test
