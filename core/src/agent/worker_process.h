// A worker process started by the agent: posix_spawn of this same binary (never a bare fork of
// a threaded process), its execution spec written to stdin, records read from a pipe on fd 3,
// stdout and stderr appended to a per-rank log file.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/line_buffer.h"

namespace commbench {

struct WorkerLaunch {
  std::string exe;                  // this binary
  std::vector<std::string> args;    // after argv[0]
  std::map<std::string, std::string> env_overrides;
  std::string stdin_data;           // the execution spec
  std::string log_path;             // stdout+stderr go here
  // Non-empty: run this command line instead, a profiler with exe+args inside it
  // (observe/profiler_command.h). Signals always go to the whole process group (the profiler and
  // the worker, and anything a plugin forked), so that the profiler finishes its output when the
  // worker is stopped and nothing the worker started outlives it.
  std::vector<std::string> wrapped_argv;
  // Non-empty: the CPUs the worker is bound to from its first instruction (run setting
  // `cpu_binding`, launch/cpu_binding.h).
  std::set<int> cpus;
};

class WorkerProcess {
 public:
  explicit WorkerProcess(const WorkerLaunch& launch);  // throws std::runtime_error on failure
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t pid() const { return pid_; }
  int result_fd() const { return result_fd_; }  // -1 once closed
  // Reads what is available; appends complete lines to `lines`. Returns false at EOF.
  bool read_lines(std::vector<std::string>& lines);
  // Non-blocking reap; true once the process has exited (then status() is valid). Whatever is
  // left in its process group is killed as it is reaped.
  bool poll_exit();
  bool exited() const { return exited_; }
  int wait_status() const { return status_; }
  // "exit code 3", "killed by signal 11 (SIGSEGV)"
  std::string describe_exit() const;
  bool exited_cleanly() const;
  void signal(int sig);
  // SIGTERM, wait up to grace_ms, then SIGKILL; always reaps.
  void terminate(int grace_ms);

 private:
  void send(int sig);

  pid_t pid_ = -1;
  int result_fd_ = -1;
  LineBuffer partial_;
  bool exited_ = false;
  int status_ = 0;
};

}  // namespace commbench
