#include "agent/orphan_reaper.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace commbench {
namespace {

struct ProcStat {
  pid_t ppid = 0;
  uint64_t start_ticks = 0;
};

// Fields 4 (ppid) and 22 (starttime) of /proc/<pid>/stat; the command name (field 2) may hold
// spaces and parentheses, so fields are counted from its closing parenthesis.
bool read_stat(pid_t pid, ProcStat& out) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return false;
  const auto close = text.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 4) out.ppid = static_cast<pid_t>(std::atol(field.c_str()));
    if (i == 22) out.start_ticks = std::strtoull(field.c_str(), nullptr, 10);
  }
  return true;
}

std::vector<pid_t> children_since(uint64_t since) {
  std::vector<pid_t> out;
  const pid_t me = ::getpid();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::atol(name.c_str()));
    ProcStat st;
    if (read_stat(pid, st) && st.ppid == me && st.start_ticks >= since) out.push_back(pid);
  }
  return out;
}

}  // namespace

bool adopt_orphans() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

uint64_t process_clock_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_BOOTTIME, &ts);
  const long hz = ::sysconf(_SC_CLK_TCK);
  // One tick early: a process started in this same tick must count as started after it.
  const uint64_t ticks = static_cast<uint64_t>(ts.tv_sec) * static_cast<uint64_t>(hz) +
                         static_cast<uint64_t>(ts.tv_nsec) / (1000000000ull / static_cast<uint64_t>(hz));
  return ticks > 0 ? ticks - 1 : 0;
}

std::vector<pid_t> reap_adopted_since(uint64_t since) {
  std::vector<pid_t> reaped;
  for (int round = 0; round < 16; ++round) {  // each round adopts the children of the last one's
    const std::vector<pid_t> found = children_since(since);
    if (found.empty()) break;
    for (pid_t pid : found) ::kill(pid, SIGKILL);
    for (pid_t pid : found) {
      ::waitpid(pid, nullptr, 0);
      reaped.push_back(pid);
    }
  }
  return reaped;
}

}  // namespace commbench
