// A case whose buffers malloc would grant but the job's memory cgroup cannot hold (issue 17,
// item 7): it is `skipped` on every rank with the limit in the reason, and the cases after it
// are still measured. Without the check the first touch of the buffers brought the OOM killer,
// which took a rank, failed the execution and lost every later case.
// The job runs in a fresh memory cgroup (v2 memory.max at the root of the unified hierarchy, or
// v1 memory.limit_in_bytes under this process's own), removed afterwards by its path.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "job_harness.h"

namespace commbench::testing {
namespace {

namespace fs = std::filesystem;

// A memory cgroup with a limit, for the test's lifetime. Empty path() when none can be made.
class MemoryCgroup {
 public:
  explicit MemoryCgroup(uint64_t limit_bytes) {
    const std::string name = fmt::format("commbench-test-{}", ::getpid());
    std::ifstream self("/proc/self/cgroup");
    std::string v1_path;
    for (std::string line; std::getline(self, line);) {
      const auto a = line.find(':'), b = line.find(':', a + 1);
      if (b == std::string::npos) continue;
      const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
      if (controllers.find(",memory,") != std::string::npos) v1_path = line.substr(b + 1);
    }
    std::ifstream root_controllers("/sys/fs/cgroup/cgroup.subtree_control");
    std::string controllers((std::istreambuf_iterator<char>(root_controllers)), {});
    if (controllers.find("memory") != std::string::npos) {
      make(fs::path("/sys/fs/cgroup") / name, "memory.max", limit_bytes);
    } else if (!v1_path.empty() && fs::exists("/sys/fs/cgroup/memory")) {
      make(fs::path("/sys/fs/cgroup/memory") / fs::path(v1_path).relative_path() / name,
           "memory.limit_in_bytes", limit_bytes);
    }
  }
  ~MemoryCgroup() {
    if (!dir_.empty()) ::rmdir(dir_.c_str());  // the job's processes have all exited
  }
  const fs::path& path() const { return dir_; }
  std::string limit_file() const { return limit_file_; }

 private:
  void make(const fs::path& dir, const std::string& limit_file, uint64_t limit) {
    std::error_code ec;
    if (!fs::create_directory(dir, ec)) return;
    std::ofstream(dir / limit_file) << limit;
    std::ifstream check(dir / limit_file);
    uint64_t got = 0;
    check >> got;
    if (got == 0 || got > limit) {
      ::rmdir(dir.c_str());
      return;
    }
    dir_ = dir;
    limit_file_ = limit_file;
  }
  fs::path dir_;
  std::string limit_file_;
};

TEST(MemoryLimit, CaseBeyondTheCgroupLimitIsSkippedAndLaterCasesRun) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a memory cgroup";
  MemoryCgroup cg(256ull << 20);
  if (cg.path().empty()) GTEST_SKIP() << "no memory cgroup controller to create a group in (v2 memory.max or v1)";
  JobDir dir;
  // allreduce 512 MiB: two 512 MiB buffers per rank, 2 ranks = 2 GiB against 256 MiB.
  const auto file = dir.write("mem.toml", R"(name = "memlimit"
[[run]]
backends = ["gloo"]
ops = ["allreduce", "broadcast"]
sizes = ["4KiB", "512MiB"]
world_size = 2
warmup = 0
iterations = 2
)");
  // The shell moves itself into the group, then becomes commbench: agent and workers run there.
  const auto r = run_shell(fmt::format("cd {} && echo $$ > {} && exec {} run {} -o out --quiet",
                                       shell_quote(dir.path().string()),
                                       shell_quote((cg.path() / "cgroup.procs").string()),
                                       shell_quote(COMMBENCH_BIN), shell_quote(file.string())));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto cases = dir.records();
  ASSERT_EQ(cases.size(), 4u) << r.output;
  for (const auto& c : cases) {
    const bool big = c["bytes"].get<uint64_t>() == (512ull << 20);
    if (big) {
      EXPECT_EQ(c["status"], "skipped") << c.dump();
      const std::string reason = c["reason"];
      EXPECT_NE(reason.find("does not fit in memory"), std::string::npos) << reason;
      EXPECT_NE(reason.find(cg.limit_file()), std::string::npos) << reason;
      EXPECT_NE(reason.find("2 ranks on this host"), std::string::npos) << reason;
    } else {
      EXPECT_EQ(c["status"], "ok") << c.dump();  // broadcast 4 KiB runs after the skipped case
    }
  }
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u);
  EXPECT_EQ(execs[0]["status"], "ok") << execs[0].dump();
}

// Issue 28 §8: a rank the OOM killer takes (a backend's own allocation, which the memory check
// cannot see) is reported as that, with the limit that was hit and the case it was running, not
// as a bare SIGKILL.
TEST(MemoryLimit, AnOomKillIsNamedWithTheLimitAndTheCase) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a memory cgroup";
  MemoryCgroup cg(256ull << 20);
  if (cg.path().empty()) GTEST_SKIP() << "no memory cgroup controller to create a group in (v2 memory.max or v1)";
  JobDir dir;
  const auto file = dir.write("oom.toml", fmt::format(R"(name = "oom"
plugin_path = ["{}"]
[[run]]
backends = ["crash"]
ops = ["allreduce"]
sizes = ["1KiB", "2KiB", "4KiB"]
world_size = 2
warmup = 0
iterations = 2
check = false
[run.options.crash]
crash_rank = 1
crash_after = 3
mode = "hog"
hog_mib = 2048
)", COMMBENCH_TEST_PLUGIN_DIR));
  const auto r = run_shell(fmt::format("cd {} && echo $$ > {} && exec {} run {} -o out --quiet",
                                       shell_quote(dir.path().string()),
                                       shell_quote((cg.path() / "cgroup.procs").string()),
                                       shell_quote(COMMBENCH_BIN), shell_quote(file.string())));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const auto execs = dir.records("execution");
  ASSERT_EQ(execs.size(), 1u) << r.output;
  EXPECT_EQ(execs[0]["status"], "failed");
  EXPECT_EQ(execs[0]["failed_rank"], 1) << execs[0].dump();
  EXPECT_EQ(execs[0]["failure_kind"], "out_of_memory") << execs[0].dump();
  const std::string reason = execs[0]["reason"];
  EXPECT_NE(reason.find("killed by the OOM killer (limit 256 MiB"), std::string::npos) << reason;
  EXPECT_NE(reason.find(cg.limit_file()), std::string::npos) << reason;
  // The case it died in, with its size, and in the reason too.
  const std::string phase = execs[0]["failed_phase"];
  EXPECT_EQ(phase.rfind("case ", 0), 0u) << execs[0].dump();
  EXPECT_NE(phase.find(" B f32"), std::string::npos) << execs[0].dump();
  EXPECT_NE(reason.find(phase), std::string::npos) << reason;
  EXPECT_LT(dir.records().size(), 3u);
}

}  // namespace
}  // namespace commbench::testing
