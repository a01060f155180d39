// The memory budget read from fake /proc and /sys/fs/cgroup trees: MemAvailable, cgroup v2
// memory.max (at the root and under unified/), v1 memory.limit_in_bytes, limits on ancestors,
// reclaimable page cache, and "max"/unlimited values (issue 17, item 7).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "measure/memory_budget.h"

namespace commbench {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

class FakeSystem {
 public:
  FakeSystem() : root_(fs::temp_directory_path() / ("commbench-mem-" + std::to_string(std::random_device{}()))) {
    fs::create_directories(root_ / "proc" / "self");
    fs::create_directories(root_ / "cg");
  }
  ~FakeSystem() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  void file(const std::string& rel, const std::string& text) const {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  void meminfo(uint64_t available_kib) const {
    file("proc/meminfo", "MemTotal:       65000000 kB\nMemFree:        1000 kB\nMemAvailable:   " +
                             std::to_string(available_kib) + " kB\n");
  }
  MemorySources sources() const { return {(root_ / "proc").string(), (root_ / "cg").string()}; }

 private:
  fs::path root_;
};

TEST(MemoryBudget, MemAvailableAloneWhenNoCgroupLimits) {
  FakeSystem sys;
  sys.meminfo(8 * 1024 * 1024);  // 8 GiB
  sys.file("proc/self/cgroup", "0::/\n");
  const auto a = available_memory(sys.sources());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bytes, 8 * kGiB);
  EXPECT_NE(a->limited_by.find("MemAvailable"), std::string::npos);
}

TEST(MemoryBudget, CgroupV2LimitMinusUsageLessReclaimableCache) {
  FakeSystem sys;
  sys.meminfo(8 * 1024 * 1024);
  sys.file("proc/self/cgroup", "0::/job/step\n");
  sys.file("cg/cgroup.controllers", "cpu memory\n");
  sys.file("cg/job/step/memory.max", std::to_string(512 * kMiB) + "\n");
  sys.file("cg/job/step/memory.current", std::to_string(300 * kMiB) + "\n");
  sys.file("cg/job/step/memory.stat", "anon 1\ninactive_file " + std::to_string(100 * kMiB) + "\nactive_file 5\n");
  const auto a = available_memory(sys.sources());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bytes, 312 * kMiB);  // 512 - (300 - 100)
  EXPECT_NE(a->limited_by.find("job/step/memory.max"), std::string::npos) << a->limited_by;
}

TEST(MemoryBudget, TheTightestAncestorWinsAndMaxMeansNoLimit) {
  FakeSystem sys;
  sys.meminfo(8 * 1024 * 1024);
  sys.file("proc/self/cgroup", "0::/job/step\n");
  sys.file("cg/cgroup.controllers", "memory\n");
  sys.file("cg/job/step/memory.max", "max\n");
  sys.file("cg/job/memory.max", std::to_string(kGiB) + "\n");
  sys.file("cg/job/memory.current", std::to_string(900 * kMiB) + "\n");
  const auto a = available_memory(sys.sources());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bytes, 124 * kMiB);
  EXPECT_NE(a->limited_by.find("cg/job/memory.max"), std::string::npos) << a->limited_by;
}

TEST(MemoryBudget, HybridV2UnderUnifiedAndV1MemoryController) {
  FakeSystem sys;
  sys.meminfo(8 * 1024 * 1024);
  sys.file("proc/self/cgroup", "4:cpuacct,memory:/batch/7\n0::/\n");
  sys.file("cg/unified/cgroup.controllers", "\n");  // v2 without the memory controller
  sys.file("cg/memory/batch/7/memory.limit_in_bytes", std::to_string(2 * kGiB) + "\n");
  sys.file("cg/memory/batch/7/memory.usage_in_bytes", std::to_string(kGiB) + "\n");
  sys.file("cg/memory/batch/7/memory.stat", "cache 1\ntotal_inactive_file " + std::to_string(256 * kMiB) + "\n");
  sys.file("cg/memory/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "unlimited"
  const auto a = available_memory(sys.sources());
  ASSERT_TRUE(a);
  EXPECT_EQ(a->bytes, kGiB + 256 * kMiB);
  EXPECT_NE(a->limited_by.find("memory.limit_in_bytes"), std::string::npos) << a->limited_by;
}

TEST(MemoryBudget, MemAvailableBelowTheCgroupLimitWins) {
  FakeSystem sys;
  sys.meminfo(100 * 1024);  // 100 MiB left on the machine
  sys.file("proc/self/cgroup", "0::/job\n");
  sys.file("cg/cgroup.controllers", "memory\n");
  sys.file("cg/job/memory.max", std::to_string(4 * kGiB) + "\n");
  sys.file("cg/job/memory.current", "0\n");
  EXPECT_EQ(available_memory(sys.sources())->bytes, 100 * kMiB);
}

TEST(MemoryBudget, NothingReadableMeansNothingIsSkipped) {
  FakeSystem sys;
  EXPECT_FALSE(available_memory(sys.sources()));
  EXPECT_EQ(memory_shortfall(UINT64_MAX / 2, 8, sys.sources()), "");
}

TEST(MemoryBudget, ShortfallCountsEveryRankOnTheHostAndTheHeadroom) {
  FakeSystem sys;
  sys.meminfo(1024 * 1024);  // 1 GiB
  sys.file("proc/self/cgroup", "0::/\n");
  EXPECT_EQ(memory_shortfall(400 * kMiB, 2, sys.sources()), "");   // 800 MiB + 64 MiB fits
  const std::string why = memory_shortfall(400 * kMiB, 3, sys.sources());  // 1200 MiB does not
  EXPECT_NE(why.find("400.0 MiB per rank x 3 ranks on this host"), std::string::npos) << why;
  EXPECT_NE(why.find("1.0 GiB is available"), std::string::npos) << why;
  // A size near 2^64 must not wrap around into "fits".
  EXPECT_NE(memory_shortfall(UINT64_MAX - 10, 4, sys.sources()), "");
}

}  // namespace
}  // namespace commbench
