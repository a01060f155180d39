#include "worker/heartbeat.h"

#include "common/heartbeat.h"

namespace commbench {

Heartbeat::Heartbeat(ResultChannel& out) : out_(out) {
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, kHeartbeatPeriod, [this] { return stop_; }))
      out_.send({{"type", "beat"}});
  });
}

Heartbeat::~Heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

}  // namespace commbench
