// launch/cpu_binding: the host's cpuset read from cgroup files (v2, v1, a container's group named
// by the host's path, a co-mounted v1 hierarchy, the online-CPUs fallback) in a temporary root,
// and the plan one agent makes of `cpu_binding`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <unistd.h>

#include "launch/cpu_binding.h"
#include "observe/cpu_list.h"

namespace commbench {
namespace {

namespace fs = std::filesystem;

class HostCpuset : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("cpuset-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void put(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path.substr(1)).parent_path());
    std::ofstream(root_ / path.substr(1)) << text << "\n";
  }
  std::set<int> read() const { return host_cpuset(root_.string()); }
  fs::path root_;
};

TEST_F(HostCpuset, CgroupV2ReadsTheGroupsEffectiveCpus) {
  put("/proc/self/cgroup", "0::/user.slice/job");
  put("/sys/fs/cgroup/user.slice/job/cpuset.cpus.effective", "2-3,6");
  put("/sys/devices/system/cpu/online", "0-7");
  EXPECT_EQ(read(), (std::set<int>{2, 3, 6}));
}

TEST_F(HostCpuset, CgroupV2RootGroupAndAnAncestorWhenTheLeafHasNoCpusetFile) {
  put("/proc/self/cgroup", "0::/");
  put("/sys/fs/cgroup/cpuset.cpus.effective", "0-1");
  EXPECT_EQ(read(), (std::set<int>{0, 1}));
  put("/proc/self/cgroup", "0::/user.slice/session");
  put("/sys/fs/cgroup/user.slice/cpuset.cpus.effective", "4-5");
  EXPECT_EQ(read(), (std::set<int>{4, 5})) << "the nearest ancestor that says";
}

TEST_F(HostCpuset, CgroupV1InAContainerWalksUpToItsOwnGroup) {
  // No cgroup namespace: the path is the host's view, the mount holds the container's group.
  put("/proc/self/cgroup", "9:memory:/docker/abc\n3:cpuset:/docker/abc\n0::/");
  put("/sys/fs/cgroup/cpuset/cpuset.effective_cpus", "1,3");
  put("/sys/devices/system/cpu/online", "0-3");
  EXPECT_EQ(read(), (std::set<int>{1, 3}));
}

TEST_F(HostCpuset, CgroupV1CoMountedAndOldKernelsCpusFile) {
  put("/proc/self/cgroup", "4:cpu,cpuset:/batch");
  put("/sys/fs/cgroup/cpu,cpuset/batch/cpuset.cpus", "0,2");
  EXPECT_EQ(read(), (std::set<int>{0, 2}));
}

TEST_F(HostCpuset, WithoutCgroupFilesTheOnlineCpusAndElseNothing) {
  EXPECT_TRUE(read().empty());
  put("/sys/devices/system/cpu/online", "0-2");
  EXPECT_EQ(read(), (std::set<int>{0, 1, 2}));
}

TEST(CpuBindingPlan, NoneAsksNothing) {
  const CpuBindingPlan p = plan_cpu_binding(CpuBinding::None, {0, 1}, {0, 1}, true, 2);
  EXPECT_EQ(p.applied, CpuBinding::None);
  EXPECT_TRUE(p.units.empty());
  EXPECT_TRUE(p.note.empty());
}

TEST(CpuBindingPlan, AnUnreadableAffinityRunsUnboundAndSaysSo) {
  const CpuBindingPlan p = plan_cpu_binding(CpuBinding::Core, {}, {0, 1}, false, 2);
  EXPECT_EQ(p.applied, CpuBinding::None);
  EXPECT_NE(p.note.find("cannot be read"), std::string::npos) << p.note;
}

TEST(CpuBindingPlan, ALauncherBoundTaskKeepsItsBindingWithTheRightLauncherFlag) {
  const CpuBindingPlan core = plan_cpu_binding(CpuBinding::Core, {1}, {0, 1, 2, 3}, false, 4);
  EXPECT_EQ(core.applied, CpuBinding::None);
  EXPECT_NE(core.note.find("the launcher bound this rank to CPUs 1 of 0-3"), std::string::npos) << core.note;
  EXPECT_NE(core.note.find("--cpu-bind=cores"), std::string::npos) << core.note;
  const CpuBindingPlan numa = plan_cpu_binding(CpuBinding::Numa, {0, 1}, {0, 1, 2, 3}, false, 4);
  EXPECT_NE(numa.note.find("--cpu-bind=ldoms"), std::string::npos) << numa.note;
}

TEST(CpuBindingPlan, LocalModeDealsWithinANarrowedMask) {
  // taskset around a local job: the agent starts every rank, so it divides what it has.
  const std::set<int> all = affinity_cpus();
  ASSERT_FALSE(all.empty());
  const std::set<int> mine = {*all.begin()};
  const CpuBindingPlan p = plan_cpu_binding(CpuBinding::Core, mine, {0, 1, 2, 3, 4, 5, 6, 7, 8}, true, 1);
  EXPECT_EQ(p.applied, CpuBinding::Core);
  ASSERT_EQ(p.units.size(), 1u);
  EXPECT_EQ(p.units[0], mine);
  EXPECT_TRUE(p.own_cpus) << "one rank, one core";
  const CpuBindingPlan two = plan_cpu_binding(CpuBinding::Core, mine, {}, true, 2);
  EXPECT_FALSE(two.own_cpus) << "two ranks on one core share it";
}

TEST(CpuBindingPlan, DealingWrapsAroundTheUnits) {
  const std::vector<std::set<int>> units = {{0, 1}, {2, 3}};
  EXPECT_EQ(cpus_for_local_rank(units, 0), (std::set<int>{0, 1}));
  EXPECT_EQ(cpus_for_local_rank(units, 3), (std::set<int>{2, 3}));
  EXPECT_TRUE(cpus_for_local_rank({}, 0).empty());
}

}  // namespace
}  // namespace commbench
