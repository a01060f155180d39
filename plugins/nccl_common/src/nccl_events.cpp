#include "nccl_events.h"

#include "nccl_types.h"

namespace commbench::nccl_backend {

EventPool::~EventPool() {
  for (cudaEvent_t e : idle_) cudaEventDestroy(e);
}

cudaEvent_t EventPool::take() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!idle_.empty()) {
      cudaEvent_t e = idle_.back();
      idle_.pop_back();
      return e;
    }
  }
  cudaEvent_t e = nullptr;
  check_cuda("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void EventPool::reserve(size_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.reserve(n);
  while (idle_.size() < n) {
    cudaEvent_t e = nullptr;
    check_cuda("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    idle_.push_back(e);
  }
}

void EventPool::give_back(cudaEvent_t e) {
  if (e == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  idle_.push_back(e);
}

std::shared_ptr<PooledEvent> record_completion(const std::shared_ptr<EventPool>& pool, cudaStream_t stream) {
  auto ev = std::make_shared<PooledEvent>(pool, pool->take());
  check_cuda("cudaEventRecord", cudaEventRecord(ev->event, stream));
  return ev;
}

}  // namespace commbench::nccl_backend
