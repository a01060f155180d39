// The job token every client of a job's bootstrap store must present (docs/launching.md,
// "Security"). Where it comes from:
//   - the user: COMMBENCH_JOB_TOKEN or COMMBENCH_JOB_TOKEN_FILE (required when a job spans hosts);
//   - otherwise a fresh random token per job. A local run keeps it to itself and hands it to its
//     workers in their environment (never on a command line, which every local user can read
//     in /proc). The agents of a one-host launch (torchrun, srun, mpirun on one node) share it
//     through a HostTokenFile that only their user can read.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "bootstrap/store.h"
#include "launch/rank_discovery.h"

namespace commbench {

// COMMBENCH_JOB_TOKEN, or the file named by COMMBENCH_JOB_TOKEN_FILE, which must be readable by
// its owner only. "" when neither is set. Throws LaunchError on a bad file.
std::string read_job_token(const EnvMap& env);

// 32 random bytes from the kernel, as 64 hex digits. Throws LaunchError if none can be had.
std::string generate_job_token();

// A token shared by the agents of one launch on one host: agent 0 writes it (mode 0600) into
// <TMPDIR or /tmp>/commbench-<uid>/ (a directory of mode 0700 that must belong to this user),
// the others read it. `job_key` says which launch: the store's port or the launcher's job id.
class HostTokenFile {
 public:
  explicit HostTokenFile(const std::string& job_key);
  ~HostTokenFile();  // agent 0 removes the file it wrote, unless withdrawn already
  HostTokenFile(const HostTokenFile&) = delete;
  HostTokenFile& operator=(const HostTokenFile&) = delete;

  const std::filesystem::path& path() const { return path_; }
  // Agent 0: writes `token` (replacing a stale file of an earlier launch).
  void publish(const std::string& token);
  // Agent 0, once every agent of the launch has joined its store: removes the file it wrote.
  // Nobody reads it after that (workers get the token in their environment), so the token
  // stays on disk only while agents are joining, and a launch killed later leaves no file.
  void withdraw();
  // The others: the token in the file, waiting until `deadline` for it to appear; "" if it
  // did not. A file that is there may be stale (an earlier launch on the same port): the caller
  // retries when the store rejects the token. Also "" as soon as `stop` returns true.
  std::string read(std::chrono::steady_clock::time_point deadline, const std::function<bool()>& stop) const;

 private:
  std::filesystem::path path_;
  bool written_ = false;
};

// An agent other than 0 of a one-host launch: the token in `file`, read a second at a time
// until `deadline` ("" if it never came, or as soon as `stop` says so). A store that listens on
// host:port while the file stays away for 2 s has withdrawn it because every task of its launch
// joined (rank 0 publishes the file the moment its port is bound): this task is one too many,
// LaunchConfigError at once rather than after the whole rendezvous timeout.
std::string read_host_token(const HostTokenFile& file, const std::string& host, uint16_t port,
                            std::chrono::steady_clock::time_point deadline, const std::function<bool()>& stop);

}  // namespace commbench
