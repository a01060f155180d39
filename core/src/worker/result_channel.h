// The worker's side of the pipe to its agent: one JSON object per line, written whole (lines
// from the heartbeat thread and the main thread never interleave).
#pragma once

#include <mutex>

#include <nlohmann/json.hpp>

namespace commbench {

class ResultChannel {
 public:
  static constexpr int kAgentGoneExit = 5;
  explicit ResultChannel(int fd, int rank) : fd_(fd), rank_(rank) {}
  // Adds "rank" and writes the line; a broken pipe (agent gone) ends the worker.
  void send(nlohmann::json message);
  void phase(const std::string& phase, int case_index = -1, const std::string& what = "");

 private:
  int fd_;
  int rank_;
  std::mutex mutex_;
};

}  // namespace commbench
