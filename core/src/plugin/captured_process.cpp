#include "plugin/captured_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/process_environment.h"

namespace commbench {
namespace {

using Clock = std::chrono::steady_clock;

// Closes on scope exit; pipes are made O_CLOEXEC so no other child of this process inherits them.
struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

bool make_pipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return false;
  read_end.fd = fds[0];
  write_end.fd = fds[1];
  return true;
}

// Reads what is available; returns false at end of file.
bool drain(int fd, std::string& into, size_t limit) {
  char buf[4096];
  ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  size_t room = limit > into.size() ? limit - into.size() : 0;
  into.append(buf, std::min(room, static_cast<size_t>(n)));  // keep reading so the child never blocks
  return true;
}

}  // namespace

CapturedRun run_captured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                         size_t max_output_bytes, const std::map<std::string, std::string>& env) {
  CapturedRun run;
  Fd out_r, out_w, err_r, err_w;
  if (!make_pipe(out_r, out_w) || !make_pipe(err_r, err_w)) {
    run.spawn_error = fmt::format("pipe: {}", std::strerror(errno));
    return run;
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, STDERR_FILENO);

  // A clean signal state: the caller may block or ignore signals (an agent waiting on its
  // children often does), and the child must crash, stop and be killed the ordinary way.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  std::vector<std::string> env_text = merged_environment(env);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  pid_t pid = -1;
  int rc = argv.empty() ? EINVAL
                        : ::posix_spawn(&pid, args[0], &actions, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  out_w.reset();  // the child holds its own copies; ours would keep the pipes from ever ending
  err_w.reset();
  if (rc != 0) {
    run.spawn_error = fmt::format("cannot start {}: {}", argv.empty() ? "" : argv[0], std::strerror(rc));
    return run;
  }

  const auto deadline = Clock::now() + timeout;
  bool out_open = true, err_open = true, timed_out = false;
  while (out_open || err_open) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_r.fd : -1, POLLIN, 0}, {err_open ? err_r.fd : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[0].revents) out_open = drain(out_r.fd, run.out, max_output_bytes);
    if (fds[1].revents) err_open = drain(err_r.fd, run.err, max_output_bytes);
  }

  // Closed pipes usually mean the child is exiting, but it may also have closed them and kept
  // running: wait only until the deadline, then kill it so this call never blocks for longer.
  int status = 0;
  pid_t waited = 0;
  while (!timed_out && (waited = ::waitpid(pid, &status, WNOHANG)) == 0) {
    if (Clock::now() >= deadline) break;
    ::usleep(5000);
  }
  if (waited == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    run.end = CapturedRun::End::TimedOut;
    return run;
  }
  if (waited < 0) {  // e.g. ECHILD when the caller ignores SIGCHLD and children are reaped for it
    run.spawn_error = fmt::format("lost track of {}: {}", argv[0], std::strerror(errno));
    return run;
  }
  if (WIFEXITED(status)) {
    run.end = CapturedRun::End::Exited;
    run.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    run.end = CapturedRun::End::Signaled;
    run.signal = WTERMSIG(status);
  }
  return run;
}

std::string describe_end(const CapturedRun& run, std::chrono::milliseconds timeout) {
  switch (run.end) {
    case CapturedRun::End::Exited: return fmt::format("exited with code {}", run.exit_code);
    case CapturedRun::End::Signaled:
      return fmt::format("was killed by signal {} ({})", run.signal, ::strsignal(run.signal));
    case CapturedRun::End::TimedOut:
      return fmt::format("did not finish within {:.3g} s and was killed", timeout.count() / 1000.0);
    case CapturedRun::End::SpawnFailed: return run.spawn_error;
  }
  return "ended in an unknown way";
}

}  // namespace commbench
