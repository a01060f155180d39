#include "agent/worker_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "common/process_environment.h"
#include "observe/cpu_list.h"

namespace commbench {
namespace {

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

void write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(fmt::format("writing the worker's spec: {}", std::strerror(errno)));
    off += static_cast<size_t>(n);
  }
}

// posix_spawn's child starts with the calling thread's CPU affinity: the thread takes the rank's
// CPUs for the spawn and its own back after, so every thread the worker ever starts is bound and
// none runs elsewhere first (binding the pid after the spawn would race the worker's threads).
class SpawnAffinity {
 public:
  explicit SpawnAffinity(const std::set<int>& cpus) {
    if (cpus.empty()) return;
    if (int rc = ::pthread_getaffinity_np(::pthread_self(), sizeof(saved_), &saved_); rc != 0)
      throw std::runtime_error(fmt::format("cpu_binding: cannot read the agent's CPU affinity ({}); set "
                                           "cpu_binding = \"none\" to run the ranks unbound",
                                           std::strerror(rc)));
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cpus)
      if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &set);
    if (int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof(set), &set); rc != 0)
      throw std::runtime_error(fmt::format("cpu_binding: cannot bind the worker to CPUs {}: {} (were they taken "
                                           "offline or out of this process's cpuset since the job started? "
                                           "cpu_binding = \"none\" runs the ranks unbound)",
                                           format_cpulist(cpus), std::strerror(rc)));
    bound_ = true;
  }
  ~SpawnAffinity() {
    // The agent deals from the mask it read at its start (job_runner.cpp), so a thread left
    // bound here only runs the agent on fewer CPUs; said, not fatal.
    if (bound_)
      if (int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof(saved_), &saved_); rc != 0)
        std::fprintf(stderr, "commbench: warning: cannot restore the agent thread's CPU affinity: %s\n",
                     std::strerror(rc));
  }
  SpawnAffinity(const SpawnAffinity&) = delete;
  SpawnAffinity& operator=(const SpawnAffinity&) = delete;

 private:
  cpu_set_t saved_;
  bool bound_ = false;
};

}  // namespace

WorkerProcess::WorkerProcess(const WorkerLaunch& launch) {
  int in_pipe[2], res_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0) throw std::runtime_error(fmt::format("pipe: {}", std::strerror(errno)));
  if (::pipe2(res_pipe, O_CLOEXEC) != 0) {
    const int err = errno;
    for (int fd : in_pipe) ::close(fd);
    throw std::runtime_error(fmt::format("pipe: {}", std::strerror(err)));
  }
  const int log_fd = ::open(launch.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    const int err = errno;
    for (int fd : {in_pipe[0], in_pipe[1], res_pipe[0], res_pipe[1]}) ::close(fd);
    throw std::runtime_error(fmt::format("cannot open log {}: {}", launch.log_path, std::strerror(err)));
  }

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&fa, log_fd, 1);
  posix_spawn_file_actions_adddup2(&fa, log_fd, 2);
  posix_spawn_file_actions_adddup2(&fa, res_pipe[1], 3);
  // Own process group: a terminal's Ctrl-C reaches the agent, which then stops workers in order.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);

  std::vector<std::string> argv_s{launch.exe};
  argv_s.insert(argv_s.end(), launch.args.begin(), launch.args.end());
  if (!launch.wrapped_argv.empty()) argv_s = launch.wrapped_argv;
  std::vector<std::string> env_s = merged_environment(launch.env_overrides);
  auto argv = c_strings(argv_s);
  auto envp = c_strings(env_s);
  int rc = 0;
  try {
    SpawnAffinity bound(launch.cpus);
    rc = ::posix_spawn(&pid_, argv_s[0].c_str(), &fa, &attr, argv.data(), envp.data());
  } catch (...) {
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    for (int fd : {in_pipe[0], in_pipe[1], res_pipe[0], res_pipe[1], log_fd}) ::close(fd);
    throw;
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in_pipe[0]);
  ::close(res_pipe[1]);
  ::close(log_fd);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(res_pipe[0]);
    throw std::runtime_error(fmt::format("cannot start worker {}: {}", argv_s[0], std::strerror(rc)));
  }
  result_fd_ = res_pipe[0];
  ::fcntl(result_fd_, F_SETFL, ::fcntl(result_fd_, F_GETFL) | O_NONBLOCK);
  // The spec is small (kilobytes); a worker that dies before reading it gives EPIPE, not a hang.
  ::signal(SIGPIPE, SIG_IGN);
  try {
    write_all(in_pipe[1], launch.stdin_data);
  } catch (...) {
    // The constructor throws, so no destructor runs: stop and reap the worker here.
    ::close(in_pipe[1]);
    terminate(500);
    ::close(result_fd_);
    result_fd_ = -1;
    throw;
  }
  ::close(in_pipe[1]);
}

WorkerProcess::~WorkerProcess() {
  if (!exited_ && pid_ > 0) terminate(500);
  if (result_fd_ >= 0) ::close(result_fd_);
}

bool WorkerProcess::read_lines(std::vector<std::string>& lines) {
  if (result_fd_ < 0) return false;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(result_fd_, buf, sizeof(buf));
    if (n > 0) {
      partial_.feed(std::string_view(buf, static_cast<size_t>(n)), lines);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    ::close(result_fd_);
    result_fd_ = -1;
    return false;
  }
}

bool WorkerProcess::poll_exit() {
  if (exited_) return true;
  // Seen without reaping first: while the exited worker is a zombie its pid (and so its process
  // group's id) cannot be reused, so what it left in its group can be killed safely.
  siginfo_t info{};
  if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pid_)
    return false;
  ::kill(-pid_, SIGKILL);  // a plugin's forked helpers: nothing outlives its worker
  ::waitpid(pid_, &status_, 0);
  exited_ = true;
  return true;
}

std::string WorkerProcess::describe_exit() const {
  if (!exited_) return "still running";
  if (WIFEXITED(status_)) return fmt::format("exit code {}", WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) {
    const int sig = WTERMSIG(status_);
    const char* abbrev = sigabbrev_np(sig);
    return fmt::format("killed by signal {} (SIG{}{})", sig, abbrev ? abbrev : "?",
                       WCOREDUMP(status_) ? ", core dumped" : "");
  }
  return "ended";
}

// The group is the one created at spawn (POSIX_SPAWN_SETPGROUP): the worker (or the profiler
// and its worker) and whatever a plugin forked without leaving the group.
void WorkerProcess::send(int sig) { ::kill(-pid_, sig); }

void WorkerProcess::signal(int sig) {
  if (!exited_ && pid_ > 0) send(sig);
}

void WorkerProcess::terminate(int grace_ms) {
  if (poll_exit()) return;
  send(SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(grace_ms);
  while (std::chrono::steady_clock::now() < until) {
    if (poll_exit()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  send(SIGKILL);
  ::waitpid(pid_, &status_, 0);
  exited_ = true;
}

bool WorkerProcess::exited_cleanly() const {
  return exited_ && WIFEXITED(status_) && WEXITSTATUS(status_) == 0;
}

}  // namespace commbench
