#include "memory_channel.h"

#include <cstring>
#include <string>

#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend::testing {

void MemoryFabric::deliver(const Key& key, std::vector<unsigned char> data) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mailbox_[key].push_back(std::move(data));
  }
  arrived_.notify_all();
}

bool MemoryFabric::take(const Key& key, std::vector<unsigned char>& out,
                        std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool got = arrived_.wait_until(lock, deadline, [&] {
    auto it = mailbox_.find(key);
    return it != mailbox_.end() && !it->second.empty();
  });
  if (!got) return false;
  auto it = mailbox_.find(key);
  out = std::move(it->second.front());
  it->second.pop_front();
  if (it->second.empty()) mailbox_.erase(it);
  return true;
}

size_t MemoryFabric::leftovers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& [k, q] : mailbox_) n += q.size();
  return n;
}

void MemoryChannel::post_send(int peer, uint32_t step, const void* buf, size_t bytes) {
  if (peer < 0 || peer >= size() || peer == rank_)
    sdk::fail(CB_ERR_INTERNAL, "send to invalid peer " + std::to_string(peer));
  const auto* p = static_cast<const unsigned char*>(buf);
  fabric_.deliver({rank_, peer, sequence_, step}, std::vector<unsigned char>(p, p + bytes));
  ++sent_;
}

void MemoryChannel::post_recv(int peer, uint32_t step, void* buf, size_t bytes) {
  if (peer < 0 || peer >= size() || peer == rank_)
    sdk::fail(CB_ERR_INTERNAL, "receive from invalid peer " + std::to_string(peer));
  pending_.push_back({peer, step, buf, bytes});
}

void MemoryChannel::wait_all() {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::vector<PendingRecv> pending;
  pending.swap(pending_);
  for (const PendingRecv& r : pending) {
    std::vector<unsigned char> data;
    if (!fabric_.take({r.peer, rank_, sequence_, r.step}, data, deadline))
      sdk::fail(CB_ERR_TIMEOUT, "rank " + std::to_string(rank_) + ": no message from rank " +
                                    std::to_string(r.peer) + " at step " + std::to_string(r.step));
    if (data.size() != r.bytes)
      sdk::fail(CB_ERR_INVALID_ARGUMENT, "rank " + std::to_string(rank_) + ": got " +
                                             std::to_string(data.size()) + " bytes from rank " +
                                             std::to_string(r.peer) + ", posted " + std::to_string(r.bytes));
    if (r.bytes > 0) std::memcpy(r.buf, data.data(), r.bytes);
  }
}

}  // namespace commbench::ucx_backend::testing
