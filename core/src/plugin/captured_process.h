// Run a short-lived helper process with a deadline and capture its stdout and stderr.
// Used to probe plugins in a subprocess: a plugin whose load crashes or hangs must not take the
// caller (the agent, or `commbench plugins`) with it.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace commbench {

struct CapturedRun {
  enum class End { Exited, Signaled, TimedOut, SpawnFailed };
  End end = End::SpawnFailed;
  int exit_code = -1;       // End::Exited
  int signal = 0;           // End::Signaled
  std::string out;          // stdout (truncated to max_output_bytes)
  std::string err;          // stderr (truncated to max_output_bytes, keeping the start)
  std::string spawn_error;  // End::SpawnFailed: why
};

// posix_spawn argv[0] (a path, not searched on PATH) with argv, stdin from /dev/null, this
// process's environment with `env` set on top. After `timeout` the process is killed (SIGKILL:
// a helper that hangs gets no grace).
CapturedRun run_captured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                         size_t max_output_bytes = 1 << 20, const std::map<std::string, std::string>& env = {});

// "exited with code 3", "killed by signal 11 (Segmentation fault)", "timed out after 10 s", ...
std::string describe_end(const CapturedRun& run, std::chrono::milliseconds timeout);

}  // namespace commbench
