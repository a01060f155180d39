#include "process_watch.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fcntl.h>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "job_harness.h"

extern char** environ;

namespace commbench::testing {
namespace fs = std::filesystem;

BackgroundCommbench::BackgroundCommbench(const std::vector<std::string>& args, const fs::path& cwd,
                                         const fs::path& log) {
  std::vector<std::string> argv_s{COMMBENCH_BIN};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  if (::posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&fa);
}

BackgroundCommbench::~BackgroundCommbench() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
  }
}

bool BackgroundCommbench::running() {
  if (pid_ <= 0 || status_ != -1) return false;
  int st = 0;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    status_ = st;
    return false;
  }
  return true;
}

int BackgroundCommbench::wait(double timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (running()) {
    if (std::chrono::steady_clock::now() > until) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (status_ == -1) return -1;
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
}

bool TcpListener::loopback() const {
  return address.rfind("127.", 0) == 0 || address == "::1" || address.rfind("::ffff:127.", 0) == 0;
}

std::vector<TcpListener> decode_listeners(const std::string& text, bool ipv6) {
  std::vector<TcpListener> out;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, state;
    if (!(f >> sl >> local >> remote >> state) || state != "0A") continue;
    const auto colon = local.find(':');
    TcpListener l;
    l.port = std::stoi(local.substr(colon + 1), nullptr, 16);
    const std::string hex = local.substr(0, colon);
    // The kernel prints each 32-bit word in host (little-endian) order.
    std::vector<unsigned> bytes;
    for (size_t w = 0; w + 8 <= hex.size(); w += 8)
      for (int b = 3; b >= 0; --b) bytes.push_back(std::stoul(hex.substr(w + 2 * static_cast<size_t>(b), 2), nullptr, 16));
    if (!ipv6) {
      l.address = std::to_string(bytes[0]) + "." + std::to_string(bytes[1]) + "." + std::to_string(bytes[2]) + "." +
                  std::to_string(bytes[3]);
    } else {
      bool zero10 = true;
      for (int i = 0; i < 10; ++i) zero10 &= bytes[static_cast<size_t>(i)] == 0;
      if (zero10 && bytes[10] == 0xff && bytes[11] == 0xff) {
        l.address = "::ffff:" + std::to_string(bytes[12]) + "." + std::to_string(bytes[13]) + "." +
                    std::to_string(bytes[14]) + "." + std::to_string(bytes[15]);
      } else {
        bool zero15 = zero10 && bytes[10] == 0 && bytes[11] == 0 && bytes[12] == 0 && bytes[13] == 0 && bytes[14] == 0;
        char buf[64];
        std::string s;
        for (size_t i = 0; i < 16; i += 2) {
          std::snprintf(buf, sizeof(buf), "%s%x", i ? ":" : "", bytes[i] << 8 | bytes[i + 1]);
          s += buf;
        }
        l.address = zero15 && bytes[15] == 1 ? "::1" : zero15 && bytes[15] == 0 ? "::" : s;
      }
    }
    out.push_back(l);
  }
  return out;
}

std::vector<TcpListener> listening_sockets(pid_t pid) {
  const fs::path proc = fs::path("/proc") / std::to_string(pid);
  std::set<std::string> inodes;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(proc / "fd", ec)) {
    const std::string target = fs::read_symlink(e.path(), ec).string();
    if (target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<TcpListener> out;
  for (const bool v6 : {false, true}) {
    const std::string text = read_text(proc / "net" / (v6 ? "tcp6" : "tcp"));
    // Keep only this process's sockets: match the inode column (the 10th).
    std::istringstream in(text);
    std::string line, mine;
    std::getline(in, line);
    mine = line + "\n";
    while (std::getline(in, line)) {
      std::istringstream f(line);
      std::string field;
      for (int i = 0; i < 10 && (f >> field); ++i) {
      }
      if (inodes.count(field)) mine += line + "\n";
    }
    for (auto& l : decode_listeners(mine, v6)) out.push_back(l);
  }
  return out;
}

std::vector<pid_t> workers_logging_under(const fs::path& dir, int rank) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& p : fs::directory_iterator("/proc", ec)) {
    const std::string name = p.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_text(p.path() / "cmdline");
    if (cmdline.find("__worker") == std::string::npos) continue;
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    if (rank >= 0 && cmdline.find(" --rank " + std::to_string(rank) + " ") == std::string::npos) continue;
    const fs::path out_file = fs::read_symlink(p.path() / "fd/1", ec);
    if (!ec && out_file.string().rfind(dir.string(), 0) == 0) out.push_back(std::stoi(name));
  }
  return out;
}

}  // namespace commbench::testing
