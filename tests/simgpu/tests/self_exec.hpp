// Runs one test of this same binary in a fresh process with extra environment (the simulated runtime
// reads its knobs once per process), and reports how it ended.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace simgpu_test {

struct ChildResult {
  bool exited = false;
  int code = -1;
  int signal = 0;
};

inline std::string self_path() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

// Child tests live in suites named SimChild* (not registered with ctest); they skip unless run as a child.
inline bool in_child() { return std::getenv("SIMGPU_TEST_CHILD") != nullptr; }

inline ChildResult run_child_test(const std::string& test, const std::vector<std::string>& env) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("SIMGPU_TEST_CHILD", "1", 1);
    for (const auto& kv : env) ::putenv(const_cast<char*>((new std::string(kv))->c_str()));
    std::string exe = self_path(), filter = "--gtest_filter=" + test;
    ::execl(exe.c_str(), exe.c_str(), filter.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ChildResult r;
  r.exited = WIFEXITED(status);
  r.code = r.exited ? WEXITSTATUS(status) : -1;
  r.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return r;
}

}  // namespace simgpu_test

#define SIMGPU_CHILD_ONLY() \
  if (!simgpu_test::in_child()) GTEST_SKIP() << "runs only as a child of its parent test"
