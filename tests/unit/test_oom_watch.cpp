// Issue 28 §8: a SIGKILL the kernel's OOM killer dealt is told from any other, from fake /proc
// and cgroup trees: the limit that was hit is named (v2 memory.events, v1 memory.oom_control, or
// the host running out: /proc/vmstat).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "agent/oom_watch.h"

namespace commbench {
namespace {

namespace fs = std::filesystem;

class FakeTree {
 public:
  FakeTree() : root_(fs::temp_directory_path() / ("commbench-oom-" + std::to_string(std::random_device{}()))) {
    fs::create_directories(root_ / "proc/self");
    fs::create_directories(root_ / "cg");
  }
  ~FakeTree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void file(const std::string& rel, const std::string& text) const {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::string proc() const { return (root_ / "proc").string(); }
  std::string cg() const { return (root_ / "cg").string(); }

 private:
  fs::path root_;
};

std::string memory_events(int oom, int kills) {
  return "low 0\nhigh 0\nmax 3\noom " + std::to_string(oom) + "\noom_kill " + std::to_string(kills) + "\n";
}

TEST(OomWatch, AKillInTheJobsCgroupV2NamesItsLimit) {
  FakeTree t;
  t.file("proc/self/cgroup", "0::/job/step\n");
  t.file("proc/vmstat", "nr_free_pages 1\noom_kill 4\n");
  t.file("cg/cgroup.controllers", "memory pids\n");
  t.file("cg/job/memory.max", "629145600\n");  // 600 MiB
  t.file("cg/job/memory.events", memory_events(0, 0));
  t.file("cg/job/step/memory.max", "max\n");
  t.file("cg/job/step/memory.events", memory_events(0, 0));
  const OomWatch watch(t.proc(), t.cg());
  EXPECT_FALSE(watch.explain_kill()) << "nothing happened yet: a plain SIGKILL";
  t.file("cg/job/memory.events", memory_events(1, 1));
  t.file("cg/job/step/memory.events", memory_events(0, 1));
  t.file("proc/vmstat", "nr_free_pages 1\noom_kill 5\n");
  const auto why = watch.explain_kill();
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("killed by the OOM killer (limit 600 MiB"), std::string::npos) << *why;
  EXPECT_NE(why->find("job/memory.max"), std::string::npos) << *why;
}

TEST(OomWatch, CgroupV1AndTheWholeHostAreRecognisedToo) {
  FakeTree t;
  t.file("proc/self/cgroup", "4:memory:/job\n0::/\n");
  t.file("proc/vmstat", "oom_kill 0\n");
  t.file("cg/memory/job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
  t.file("cg/memory/job/memory.limit_in_bytes", "268435456\n");
  const OomWatch watch(t.proc(), t.cg());
  t.file("cg/memory/job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  auto why = watch.explain_kill();
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("limit 256 MiB"), std::string::npos) << *why;

  FakeTree host;
  host.file("proc/self/cgroup", "0::/\n");
  host.file("proc/vmstat", "oom_kill 2\n");
  const OomWatch host_watch(host.proc(), host.cg());
  host.file("proc/vmstat", "oom_kill 3\n");
  why = host_watch.explain_kill();
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the host ran out of memory"), std::string::npos) << *why;
}

}  // namespace
}  // namespace commbench
