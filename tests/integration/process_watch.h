// Looking at a running job from outside, as a local user could: a `commbench run` started in the
// background, the TCP sockets a process listens on (/proc/<pid>/net/tcp{,6} and its fds), and
// the worker processes of a job (by their log files under the job's folder).
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

namespace commbench::testing {

// `commbench <args>` started in the background from `cwd`, output to `log`.
class BackgroundCommbench {
 public:
  BackgroundCommbench(const std::vector<std::string>& args, const std::filesystem::path& cwd,
                      const std::filesystem::path& log);
  ~BackgroundCommbench();  // SIGKILL if still running
  pid_t pid() const { return pid_; }
  bool running();
  // Waits for the exit and returns the exit code (128 + signal when killed); -1 after `timeout_s`.
  int wait(double timeout_s);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

struct TcpListener {
  std::string address;  // "127.0.0.1", "::1", "192.0.2.2", ...
  int port = 0;
  bool loopback() const;
};

// TCP sockets in state LISTEN that process `pid` holds.
std::vector<TcpListener> listening_sockets(pid_t pid);

// Every LISTEN line of /proc/net/tcp-format text ("sl local_address ... st ..."), decoded.
std::vector<TcpListener> decode_listeners(const std::string& proc_net_tcp_text, bool ipv6);

// Live `commbench __worker` processes of rank `rank` (-1: any) whose stdout is a log file under `dir`.
std::vector<pid_t> workers_logging_under(const std::filesystem::path& dir, int rank = -1);

}  // namespace commbench::testing
