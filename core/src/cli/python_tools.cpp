#include "cli/python_tools.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string_view>

#include <fmt/format.h>

#include "common/exit_codes.h"
#include "plugin/search_path.h"

extern char** environ;

namespace commbench {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

PythonToolInputs current_inputs() {
  return PythonToolInputs{env_or_empty("COMMBENCH_PYTHON"), env_or_empty("COMMBENCH_PYTHON_DIR"),
                          current_executable_path(), COMMBENCH_INSTALL_PYTHON_DIR};
}

bool has_package(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(dir) / "commbench" / "__main__.py", ec);
}

}  // namespace

std::vector<std::string> python_package_dirs(const PythonToolInputs& in) {
  std::vector<std::string> dirs;
  if (!in.env_python_dir.empty()) dirs.push_back(in.env_python_dir);
  if (!in.exe_path.empty()) {
    const auto exe_dir = std::filesystem::path(in.exe_path).parent_path();
    dirs.push_back((exe_dir.parent_path() / "share" / "commbench" / "python").lexically_normal().string());
  }
  if (!in.install_dir.empty()) dirs.push_back(in.install_dir);
  return dirs;
}

std::string python_interpreter(const PythonToolInputs& in) {
  if (!in.env_python.empty()) return in.env_python;
  if (::access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

namespace {

// Spawns `python -m commbench args...` with the package on PYTHONPATH; stdout to `out_fd` when
// >= 0; `started_fd` (when >= 0) becomes the child's fd 3, on which the bootstrap writes one byte
// once the interpreter runs it. Returns the pid, or -1 with `error` set.
pid_t spawn_python_tool(const std::vector<std::string>& args, const std::string& what, int out_fd, bool quiet,
                        std::string& error, int started_fd = -1);

// While a tool runs, SIGINT, SIGTERM and SIGHUP sent to commbench (by `timeout`, a batch
// system's time limit, a CI cancel: they signal the pid, not the group) end Python too, with
// SIGTERM (a second signal: SIGKILL, for a Python that does not end), and commbench waits for it:
// a report must not go on writing into a folder after the command that makes it has been seen to
// end.
volatile sig_atomic_t g_tool_pid = 0;
volatile sig_atomic_t g_tool_signal = 0;

void forward_to_tool(int sig) {
  const bool again = g_tool_signal != 0;
  g_tool_signal = sig;
  if (g_tool_pid > 0) ::kill(static_cast<pid_t>(g_tool_pid), again ? SIGKILL : SIGTERM);
}

class ForwardSignals {
 public:
  explicit ForwardSignals(pid_t pid) {
    g_tool_signal = 0;
    g_tool_pid = pid;
    struct sigaction sa {};
    sa.sa_handler = forward_to_tool;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~ForwardSignals() {
    g_tool_pid = 0;
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals{SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> old_{};
};

// The tool's exit code, or 128 + the signal that ended it; `interrupted` is set when that was a
// signal commbench passed on (not Python dying by itself, e.g. of the OOM killer).
int wait_python_tool(pid_t pid, const std::string& what, bool* interrupted) {
  int status = 0;
  {
    ForwardSignals forward(pid);
    // Wait without reaping, stop forwarding, then reap: a signal in between must not reach a pid
    // the system may already have given to another process.
    siginfo_t info{};
    while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0)
      if (errno != EINTR) return kExitInvalid;
    g_tool_pid = 0;
    while (::waitpid(pid, &status, 0) < 0)
      if (errno != EINTR) return kExitInvalid;
  }
  const int sig = g_tool_signal;
  if (interrupted) *interrupted = sig != 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  if (sig != 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    const char* name = sigabbrev_np(sig);
    std::cerr << fmt::format("{}: stopped by signal {} (SIG{}); what it had written so far is left as it is, "
                             "unfinished\n", what, sig, name ? name : "?");
    return 128 + sig;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  std::cerr << fmt::format("{}: Python was killed by signal {}\n", what, WTERMSIG(status));
  return 128 + WTERMSIG(status);
}

}  // namespace

std::string python_tool_output(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe(fds) != 0) return "";
  std::string error;
  const pid_t pid = spawn_python_tool(args, "commbench", fds[1], true, error);
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (pid < 0) return "";
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? out : "";
}

int run_python_tool(const std::vector<std::string>& args, const std::string& what, bool* interrupted) {
  std::string error;
  // Whether the interpreter ran commbench's bootstrap at all: COMMBENCH_PYTHON=/bin/false (or a
  // wrapper that fails) exited 1 without a word, which `compare` and `check` passed on as
  // "regressed" / "expectations missed" with nothing listed.
  int started[2] = {-1, -1};
  if (::pipe2(started, O_CLOEXEC | O_NONBLOCK) != 0) started[0] = started[1] = -1;
  // The write end above fd 9: with commbench started on a closed fd 0-2 it could be 3 itself, and
  // dup2 onto itself keeps close-on-exec on older C libraries.
  if (started[1] >= 0 && started[1] < 10) {
    const int high = ::fcntl(started[1], F_DUPFD_CLOEXEC, 10);
    ::close(started[1]);
    started[1] = high;
  }
  const pid_t pid = spawn_python_tool(args, what, -1, false, error, started[1]);
  if (started[1] >= 0) ::close(started[1]);
  if (pid < 0) {
    if (started[0] >= 0) ::close(started[0]);
    std::cerr << error;
    return kExitInvalid;
  }
  const int code = wait_python_tool(pid, what, interrupted);
  if (started[0] >= 0) {
    char byte = 0;
    const bool ran = ::read(started[0], &byte, 1) == 1;
    ::close(started[0]);
    // Not after a signal commbench passed on (Python may not have started yet: that is said above).
    if (!ran && code > 0 && code < 128 && g_tool_signal == 0) {
      std::cerr << fmt::format("{}: the Python interpreter '{}' exited with code {} before it ran commbench's Python "
                               "package: set COMMBENCH_PYTHON to a Python 3 (or unset it for python3 on PATH)\n",
                               what, python_interpreter(current_inputs()), code);
      return kExitInvalid;
    }
  }
  return code;
}

namespace {

pid_t spawn_python_tool(const std::vector<std::string>& args, const std::string& what, int out_fd, bool quiet,
                        std::string& error, int started_fd) {
  const PythonToolInputs in = current_inputs();
  std::string package_dir;
  const auto dirs = python_package_dirs(in);
  for (const auto& d : dirs)
    if (has_package(d)) {
      package_dir = d;
      break;
    }
  if (package_dir.empty()) {
    std::string looked;
    for (const auto& d : dirs) looked += "\n  " + d;
    error = fmt::format(
        "{}: the commbench Python package (python/commbench in the source tree) is not installed; "
        "looked in:{}\nInstall commbench (cmake --install), or set COMMBENCH_PYTHON_DIR to the "
        "source tree's python/ folder.\n",
        what, looked);
    return -1;
  }
  const std::string python = python_interpreter(in);
  // An empty or relative PYTHONPATH entry ("", ".", "lib") is read against the current folder,
  // where anyone who can write there could plant a json.py: the user's absolute entries are kept.
  std::string pythonpath = package_dir;
  if (const char* old = std::getenv("PYTHONPATH"); old && *old) {
    std::string_view rest(old);
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::string_view entry = rest.substr(0, colon);
      if (!entry.empty() && entry.front() == '/') (pythonpath += ':') += entry;
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }

  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "PYTHONPATH=", 11) != 0 && std::strncmp(*e, "COMMBENCH_STARTED_FD=", 21) != 0)
      env_strings.emplace_back(*e);
  env_strings.push_back("PYTHONPATH=" + pythonpath);
  // fd 3 and the pipe's identity: a wrapper interpreter that closed fd 3 (another file opened
  // there) must not get a byte written into it; the bootstrap checks that it is this pipe.
  struct stat pipe_stat {};
  if (started_fd >= 0 && ::fstat(started_fd, &pipe_stat) == 0)
    env_strings.push_back(fmt::format("COMMBENCH_STARTED_FD=3:{}:{}", static_cast<uint64_t>(pipe_stat.st_dev),
                                      static_cast<uint64_t>(pipe_stat.st_ino)));
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  // Not `python -m commbench`: that puts the current folder first on sys.path, so a json.py or a
  // commbench/ planted wherever the command is started from would run as its user. The bootstrap
  // drops that entry before importing anything (Python >= 3.11's -P does the same; this works on
  // any Python 3) and runs the package as -m would.
  static constexpr const char* kBootstrap =
      "import sys\n"
      "if sys.path and sys.path[0] in ('', '.'): del sys.path[0]\n"
      "import os\n"
      // run_python_tool's "started" pipe: "3:<dev>:<ino>", written only if fd 3 is that pipe.
      "fd = os.environ.pop('COMMBENCH_STARTED_FD', '').split(':')\n"
      "try:\n"
      "    st = os.fstat(3)\n"
      "    if len(fd) == 3 and fd[0] == '3' and [str(st.st_dev), str(st.st_ino)] == fd[1:]:\n"
      "        os.write(3, b'1'); os.close(3)\n"
      "except OSError:\n"
      "    pass\n"
      "del fd\n"
      "import runpy\n"
      "runpy.run_module('commbench', run_name='__main__', alter_sys=True)\n";
  std::vector<std::string> argv_strings{python, "-c", kBootstrap};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  if (out_fd >= 0) ::posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  if (started_fd >= 0) ::posix_spawn_file_actions_adddup2(&actions, started_fd, 3);
  if (quiet) ::posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, python.c_str(), &actions, nullptr, argv.data(), envp.data());
  ::posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    error = fmt::format(
        "{}: cannot start Python ('{}': {}). Install Python 3 (apt-get install python3 "
        "python3-matplotlib) or set COMMBENCH_PYTHON to an interpreter.\n",
        what, python, std::strerror(rc));
    return -1;
  }
  return pid;
}

}  // namespace

}  // namespace commbench
