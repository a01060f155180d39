// Test plugin "crash": a working backend (see ../common/fault_backend.h) in which one rank dies
// on purpose, to prove that a crashing worker fails its run and nothing else.
//
// Options ([run.options.crash] in an experiment):
//   crash_rank  = rank that dies (default 1)
//   crash_after = posts that rank completes before dying (default 3: it dies in its 4th post)
//   mode        = "segv" (SIGSEGV, default) | "abort" (SIGABRT) | "exit" (exit code 7) |
//                 "error": the post fails with CB_ERR_INTERNAL and a message that mentions a
//                 timeout, to prove that the core goes by the status, not the words
//   corrupt     = true: crash_rank adds 1 to element 0 of every allreduce result instead of
//                 crashing (proves that #wrong is counted and fails the job)
//   fd_leak     = "lazy": the 6th comm_create opens a descriptor kept for the process's life,
//                 as CUDA and NCCL open theirs (not a leak: conformance must pass it);
//                 "per_comm": every comm_create opens one and never closes it (a leak)
#include <fcntl.h>

#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "../common/fault_backend.h"

namespace cbtest {
namespace {

enum class CrashMode { Segv, Abort, Exit, Error };
int64_t g_crash_rank = 1;
int64_t g_crash_after = 3;
CrashMode g_mode = CrashMode::Segv;
bool g_corrupt = false;
std::string g_fd_leak = "none";

}  // namespace

const char* const kPluginName = "crash";
const char* const kPluginDescription = "test plugin: one rank crashes on purpose at a chosen post";
const std::vector<std::string> kOptionKeys = {"crash_rank", "crash_after", "mode", "corrupt", "fd_leak"};

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
  else if (m == "error") g_mode = CrashMode::Error;
  else throw std::invalid_argument("option mode='" + m + "' must be segv, abort, exit or error");
}

void on_comm_create(const cb_host_services&, uint64_t index) {
  if ((g_fd_leak == "lazy" && index == 5) || g_fd_leak == "per_comm") ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void after_allreduce(const cb_host_services& host, float* result, size_t count) {
  if (g_corrupt && host.rank == g_crash_rank && count > 0) result[0] += 1.0f;
}

void before_post(const cb_host_services& host, uint64_t post_index) {
  if (g_corrupt) return;
  if (host.rank != g_crash_rank || post_index != static_cast<uint64_t>(g_crash_after)) return;
  std::string what = "crash: rank " + std::to_string(host.rank) + " crashing on purpose in post " +
                     std::to_string(post_index);
  host.log(host.ctx, CB_LOG_ERROR, what.c_str());
  if (g_mode == CrashMode::Error)
    throw InjectedError{CB_ERR_INTERNAL, "rank " + std::to_string(host.rank) +
                                             " failed on purpose; nothing timed out, though this "
                                             "message says timeout (timeout_ms) and timed out"};
  switch (g_mode) {
    case CrashMode::Segv: std::raise(SIGSEGV); break;
    case CrashMode::Abort: std::abort();
    case CrashMode::Exit: std::exit(7);
    case CrashMode::Error: break;  // thrown above
  }
  std::abort();  // SIGSEGV was caught and ignored by someone: still die
}

}  // namespace cbtest
