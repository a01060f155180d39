// CUDA events for request completion, pooled per communicator: creating and destroying an event
// per op would sit on the timed path. A PooledEvent returns its event to the pool when the last
// request holding it goes (requests of one group share one event).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

namespace commbench::nccl_backend {

// Requests in flight at once that never need a new event: the core's per-iteration loops hold
// one or two, a windowed p2p pattern one per message of its window (64 by default).
inline constexpr size_t kPrewarmedEvents = 80;

class EventPool : public std::enable_shared_from_this<EventPool> {
 public:
  ~EventPool();
  cudaEvent_t take();  // throws PluginError when CUDA cannot create one
  void give_back(cudaEvent_t e);
  // Creates events up to `n` idle ones, outside any timed path (at communicator creation).
  void reserve(size_t n);

 private:
  std::mutex mu_;
  std::vector<cudaEvent_t> idle_;
};

struct PooledEvent {
  std::shared_ptr<EventPool> pool;
  cudaEvent_t event = nullptr;
  PooledEvent(std::shared_ptr<EventPool> p, cudaEvent_t e) : pool(std::move(p)), event(e) {}
  ~PooledEvent() { pool->give_back(event); }
  PooledEvent(const PooledEvent&) = delete;
  PooledEvent& operator=(const PooledEvent&) = delete;
};

// Takes an event from the pool and records it on `stream`.
std::shared_ptr<PooledEvent> record_completion(const std::shared_ptr<EventPool>& pool, cudaStream_t stream);

}  // namespace commbench::nccl_backend
