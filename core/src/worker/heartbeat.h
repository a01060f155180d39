// Beats on the result channel every kHeartbeatPeriod from its own thread while it lives. A rank
// whose process is stopped, frozen or starved falls silent, which lets the agent name the rank
// that held the others up instead of the peers that were waiting for it (docs/launching.md).
#pragma once

#include <condition_variable>
#include <mutex>
#include <thread>

#include "worker/result_channel.h"

namespace commbench {

class Heartbeat {
 public:
  explicit Heartbeat(ResultChannel& out);
  ~Heartbeat();
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  ResultChannel& out_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace commbench
