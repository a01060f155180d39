// Test plugin "crash": a working backend (see ../common/fault_backend.h) in which one rank dies
// on purpose, to prove that a crashing worker fails its run and nothing else.
//
// Options ([run.options.crash] in an experiment):
//   crash_rank  = rank that dies (default 1)
//   crash_after = posts that rank completes before dying (default 3: it dies in its 4th post)
//   mode        = "segv" (SIGSEGV, default) | "abort" (SIGABRT) | "exit" (exit code 7) |
//                 "exit0": _exit(0) inside the post, as a library calling exit would (the rank
//                 ends "cleanly" without its result) |
//                 "error": the post fails with CB_ERR_INTERNAL and a message that mentions a
//                 timeout, to prove that the core goes by the status, not the words |
//                 "unavailable": the post fails with CB_ERR_UNAVAILABLE (the backend cannot
//                 run here after all); "unavailable_comm": comm_create fails so on every rank |
//                 "hog": allocates and touches `hog_mib` MiB (default 1024), for the OOM killer |
//                 "spawn": no crash; the rank starts two `sleep 300` processes, one left in its
//                 process group and one detached (setsid, double fork), and writes their pids
//                 to `pid_file`, to prove that nothing a worker starts outlives the job
//   corrupt     = true: crash_rank adds 1 to element 0 of every allreduce result instead of
//                 crashing (proves that #wrong is counted and fails the job)
//   pid_file, hog_mib: see "spawn" and "hog"
//   fd_leak     = "lazy": the 6th comm_create opens a descriptor kept for the process's life,
//                 as CUDA and NCCL open theirs (not a leak: conformance must pass it);
//                 "per_comm": every comm_create opens one and never closes it (a leak)
//   leak_kib    = KiB every post allocates, touches and never frees (default 0: a leak per call)
//   leak_bytes  = bytes every post allocates and never frees, untouched (default 0): a leak too
//                 small for the resident memory to show in hundreds of calls
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <vector>
#include <memory>
#include <cstring>
#include <stdexcept>
#include <string>

#include "../common/fault_backend.h"

namespace cbtest {
namespace {

enum class CrashMode { Segv, Abort, Exit, Exit0, Error, Unavailable, UnavailableComm, Hog, Spawn };
int64_t g_crash_rank = 1;
int64_t g_crash_after = 3;
CrashMode g_mode = CrashMode::Segv;
bool g_corrupt = false;
std::string g_fd_leak = "none";
int g_leak_kib = 0;
int g_leak_bytes = 0;
std::string g_pid_file;
int64_t g_hog_mib = 1024;

// Starts `sleep 300` and returns its pid; with `detach` in a new session through a double fork,
// so its parent is gone and it is in no process group of the worker.
pid_t start_sleeper(bool detach) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(fds[0]);
    if (detach) {
      ::setsid();
      if (::fork() != 0) ::_exit(0);
    }
    const pid_t me = ::getpid();
    [[maybe_unused]] auto n = ::write(fds[1], &me, sizeof(me));
    ::close(fds[1]);
    ::execl("/bin/sleep", "sleep", "300", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(fds[1]);
  pid_t pid = -1;
  if (::read(fds[0], &pid, sizeof(pid)) != sizeof(pid)) pid = -1;
  ::close(fds[0]);
  if (detach) ::waitpid(child, nullptr, 0);  // the intermediate process
  return pid;
}

}  // namespace

const char* const kPluginName = "crash";
const char* const kPluginDescription = "test plugin: one rank crashes on purpose at a chosen post";
const std::vector<std::string> kOptionKeys = {"crash_rank", "crash_after", "mode",   "corrupt",
                                               "fd_leak",    "pid_file",    "hog_mib",  "leak_kib",
                                               "leak_bytes"};

void configure(const Options& options, const cb_host_services&) {
  g_crash_rank = int_option(options, "crash_rank", 1);
  g_crash_after = int_option(options, "crash_after", 3);
  if (g_crash_after < 0) throw std::invalid_argument("option crash_after must be >= 0");
  auto corrupt = options.find("corrupt");
  g_corrupt = corrupt != options.end() && corrupt->second == "true";
  auto leak = options.find("fd_leak");
  g_fd_leak = leak == options.end() ? "none" : leak->second;
  if (g_fd_leak != "none" && g_fd_leak != "lazy" && g_fd_leak != "per_comm")
    throw std::invalid_argument("option fd_leak='" + g_fd_leak + "' must be none, lazy or per_comm");
  auto mode = options.find("mode");
  std::string m = mode == options.end() ? "segv" : mode->second;
  if (m == "segv") g_mode = CrashMode::Segv;
  else if (m == "abort") g_mode = CrashMode::Abort;
  else if (m == "exit") g_mode = CrashMode::Exit;
  else if (m == "exit0") g_mode = CrashMode::Exit0;
  else if (m == "error") g_mode = CrashMode::Error;
  else if (m == "unavailable") g_mode = CrashMode::Unavailable;
  else if (m == "unavailable_comm") g_mode = CrashMode::UnavailableComm;
  else if (m == "spawn") g_mode = CrashMode::Spawn;
  else if (m == "hog") g_mode = CrashMode::Hog;
  else throw std::invalid_argument("option mode='" + m + "' must be segv, abort, exit, exit0, error, unavailable, "
                                   "unavailable_comm, hog or spawn");
  g_hog_mib = int_option(options, "hog_mib", 1024);
  g_leak_kib = int_option(options, "leak_kib", 0);
  g_leak_bytes = int_option(options, "leak_bytes", 0);
  auto pid_file = options.find("pid_file");
  g_pid_file = pid_file == options.end() ? "" : pid_file->second;
}

void on_comm_create(const cb_host_services&, uint64_t index) {
  if (g_mode == CrashMode::UnavailableComm)
    throw InjectedError{CB_ERR_UNAVAILABLE, "crash: no communicator here, on purpose (mode unavailable_comm)"};
  if ((g_fd_leak == "lazy" && index == 5) || g_fd_leak == "per_comm") ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void after_allreduce(const cb_host_services& host, float* result, size_t count) {
  if (g_corrupt && host.rank == g_crash_rank && count > 0) result[0] += 1.0f;
}

void before_post(const cb_host_services& host, uint64_t post_index) {
  if (g_leak_kib > 0) {  // kept reachable, so nothing frees or elides it
    static std::vector<std::unique_ptr<char[]>> leaked;
    leaked.emplace_back(new char[static_cast<size_t>(g_leak_kib) * 1024]);
    std::memset(leaked.back().get(), 1, static_cast<size_t>(g_leak_kib) * 1024);
  }
  if (g_leak_bytes > 0) {
    static std::vector<std::unique_ptr<char[]>> leaked;
    leaked.emplace_back(new char[static_cast<size_t>(g_leak_bytes)]);
  }
  if (g_corrupt) return;
  if (host.rank != g_crash_rank || post_index != static_cast<uint64_t>(g_crash_after)) return;
  if (g_mode == CrashMode::Spawn) {
    const pid_t in_group = start_sleeper(false), detached = start_sleeper(true);
    std::ofstream(g_pid_file) << in_group << "\n" << detached << "\n";
    return;
  }
  std::string what = "crash: rank " + std::to_string(host.rank) + " crashing on purpose in post " +
                     std::to_string(post_index);
  host.log(host.ctx, CB_LOG_ERROR, what.c_str());
  if (g_mode == CrashMode::Unavailable)
    throw InjectedError{CB_ERR_UNAVAILABLE, "rank " + std::to_string(host.rank) + " cannot run here after all, on purpose"};
  if (g_mode == CrashMode::Error)
    throw InjectedError{CB_ERR_INTERNAL, "rank " + std::to_string(host.rank) +
                                             " failed on purpose; nothing timed out, though this "
                                             "message says timeout (timeout_ms) and timed out"};
  if (g_mode == CrashMode::Hog) {
    // Touched page by page, so the memory is really taken (malloc alone grants it lazily).
    const size_t bytes = static_cast<size_t>(g_hog_mib) << 20;
    auto* p = static_cast<volatile char*>(std::malloc(bytes));
    for (size_t i = 0; p != nullptr && i < bytes; i += 4096) p[i] = 1;
    return;  // the limit was larger than the hog: nothing happened
  }
  switch (g_mode) {
    case CrashMode::Segv: std::raise(SIGSEGV); break;
    case CrashMode::Abort: std::abort();
    case CrashMode::Exit: std::exit(7);
    case CrashMode::Exit0: ::_exit(0);
    case CrashMode::Error: case CrashMode::Unavailable: case CrashMode::UnavailableComm:
    case CrashMode::Spawn: case CrashMode::Hog: break;  // thrown / returned above
  }
  std::abort();  // SIGSEGV was caught and ignored by someone: still die
}

}  // namespace cbtest
