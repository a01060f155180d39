#include "worker/result_channel.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>

namespace commbench {

void ResultChannel::send(nlohmann::json message) {
  message["rank"] = rank_;
  const std::string line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mutex_);
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(kAgentGoneExit);  // nobody to report to: stop now, quietly
    off += static_cast<size_t>(n);
  }
}

void ResultChannel::phase(const std::string& phase, int case_index, const std::string& what) {
  nlohmann::json m{{"type", "phase"}, {"phase", phase}};
  if (case_index >= 0) m["case"] = case_index;
  if (!what.empty()) m["what"] = what;
  send(std::move(m));
}

}  // namespace commbench
