// Simulated NCCL across processes: each test spawns 1, 2 or 4 rank processes (simgpu_nccl_rank) that
// run one scenario against the simulated libnccl.so.2 (or its NCCLX variant) and check their results.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <nccl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string uid_hex() {
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::string s;
  char b[3];
  for (char c : id.internal) {
    std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(c));
    s += b;
  }
  return s;
}

struct RankEnd {
  int code = -1;   // exit status, or -1
  int signal = 0;  // terminating signal
};

// Runs `n` ranks of `scenario`; per_rank_env[r] adds variables for rank r. Ranks still running after
// `timeout_s` are killed (by pid) and reported with SIGKILL.
std::vector<RankEnd> run_ranks(const std::string& scenario, int n, const std::string& lib,
                               const std::vector<std::string>& env, const std::vector<std::vector<std::string>>& per_rank_env = {},
                               int timeout_s = 40) {
  const std::string id1 = uid_hex(), id2 = uid_hex();
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      for (const auto& kv : env) ::putenv(const_cast<char*>((new std::string(kv))->c_str()));
      if (static_cast<size_t>(r) < per_rank_env.size())
        for (const auto& kv : per_rank_env[static_cast<size_t>(r)]) ::putenv(const_cast<char*>((new std::string(kv))->c_str()));
      const std::string rs = std::to_string(r), ns = std::to_string(n);
      ::execl(SIMGPU_NCCL_RANK_EXE, SIMGPU_NCCL_RANK_EXE, scenario.c_str(), rs.c_str(), ns.c_str(), lib.c_str(),
              id1.c_str(), id2.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  std::vector<RankEnd> ends(static_cast<size_t>(n));
  std::vector<bool> done(static_cast<size_t>(n), false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (int left = n; left > 0;) {
    for (size_t r = 0; r < pids.size(); ++r) {
      if (done[r]) continue;
      int status = 0;
      if (::waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        done[r] = true;
        --left;
        ends[r].code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        ends[r].signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      for (size_t r = 0; r < pids.size(); ++r)
        if (!done[r]) ::kill(pids[r], SIGKILL);
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Ranks that ended normally leave no segment behind; a rank killed before every rank joined does: remove it.
  bool all_ok = true;
  for (const RankEnd& e : ends) all_ok = all_ok && e.code == 0;
  for (const std::string& hex : {id1, id2}) {
    const bool left = ::shm_unlink(("/simgpu-nccl-" + hex.substr(16, 32)).c_str()) == 0;
    EXPECT_FALSE(left && all_ok) << "a shared-memory segment was left in /dev/shm";
  }
  return ends;
}

void expect_all_passed(const std::vector<RankEnd>& ends) {
  for (size_t r = 0; r < ends.size(); ++r)
    EXPECT_EQ(ends[r].code, 0) << "rank " << r << " failed (exit " << ends[r].code << ", signal " << ends[r].signal
                               << "); its stderr above says why";
}

const std::string kNccl = SIMGPU_NCCL_LIBRARY;
const std::string kNcclx = SIMGPU_NCCLX_LIBRARY_PATH;
const std::string kSmallSlots = "SIMGPU_NCCL_SLOT_BYTES=4096";  // many rounds per op

TEST(SimNccl, EveryCollectiveAndDtypeTwoRanks) { expect_all_passed(run_ranks("collectives", 2, kNccl, {kSmallSlots})); }
TEST(SimNccl, EveryCollectiveAndDtypeFourRanks) { expect_all_passed(run_ranks("collectives", 4, kNccl, {kSmallSlots})); }
TEST(SimNccl, NcclxVariantAllToAllvFourRanks) { expect_all_passed(run_ranks("alltoallv", 4, kNcclx, {kSmallSlots})); }
TEST(SimNccl, NcclxVariantAllCollectivesTwoRanks) { expect_all_passed(run_ranks("collectives", 2, kNcclx, {})); }

TEST(SimNccl, StockNcclHasNoAllToAllv) {
  void* h = ::dlopen(SIMGPU_NCCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(::dlsym(h, "ncclAllToAllv"), nullptr);
  int v = 0;
  ASSERT_EQ(ncclGetVersion(&v), ncclSuccess);
  EXPECT_EQ(v, NCCL_VERSION_CODE);
}

TEST(SimNccl, NonBlockingInitAndOpsReturnInProgressAndRejectEarlyReuse) {
  expect_all_passed(run_ranks("nonblocking", 2, kNccl, {"SIMGPU_NCCL_LAUNCH_DELAY_MS=1000"}));
}

TEST(SimNccl, SingleRankLaunchesSynchronouslyAndNcclMemAllocIsDeviceMemory) {
  expect_all_passed(run_ranks("single", 1, kNccl, {"SIMGPU_DEVICE_MEMORY=16MiB"}));
}

TEST(SimNccl, UngroupedRecvThenSendDeadlocksGroupedWorks) { expect_all_passed(run_ranks("p2p", 2, kNccl, {})); }

TEST(SimNccl, MismatchedCollectivesFailWithMessageInsteadOfHanging) {
  expect_all_passed(run_ranks("mismatch", 2, kNccl, {}));
}

TEST(SimNccl, TwoRanksOnOneGpuAreDuplicateGpu) {
  expect_all_passed(run_ranks("duplicate", 2, kNccl, {"SIMGPU_TEST_DEVICE=0"}));
  // Different CUDA_VISIBLE_DEVICES, same physical GPU: still a duplicate.
  expect_all_passed(run_ranks("duplicate", 2, kNccl, {"SIMGPU_TEST_DEVICE=0"},
                              {{"CUDA_VISIBLE_DEVICES=3"}, {"CUDA_VISIBLE_DEVICES=3,2"}}));
}

TEST(SimNccl, DistinctPhysicalGpusBehindVisibleDevicesAreFine) {
  // Both ranks use ordinal 0, but CUDA_VISIBLE_DEVICES maps them to different physical GPUs.
  expect_all_passed(run_ranks("alltoallv", 2, kNcclx, {"SIMGPU_TEST_DEVICE=0"},
                              {{"CUDA_VISIBLE_DEVICES=0"}, {"CUDA_VISIBLE_DEVICES=1"}}));
}

TEST(SimNccl, AbortFreesTheCommunicatorAndLaterUseIsCaught) { expect_all_passed(run_ranks("abort", 2, kNccl, {})); }

TEST(SimNccl, CommunicatorDeviceMemoryKnob) {
  expect_all_passed(run_ranks("comm_memory", 2, kNccl, {"SIMGPU_NCCL_COMM_MEMORY=8MiB"}));
}

TEST(SimNccl, PeerExitIsRemoteErrorNotAHang) { expect_all_passed(run_ranks("peer_exit", 2, kNccl, {}, {}, 20)); }

TEST(SimNccl, FaultFailCommInitOnOneRank) {
  expect_all_passed(run_ranks("fault_init", 2, kNccl,
                              {"SIMGPU_FAIL_COMM_INIT=1", "SIMGPU_FAULT_RANK=1", "SIMGPU_NCCL_TIMEOUT=2"}));
}

TEST(SimNccl, FaultAsyncErrorAfterNOpsReachesThePeer) {
  expect_all_passed(run_ranks("fault_async", 2, kNccl, {"SIMGPU_ASYNC_ERROR_AFTER=2", "SIMGPU_FAULT_RANK=1"}));
}

TEST(SimNccl, FaultHangAfterNOpsUntilAbort) {
  expect_all_passed(run_ranks("fault_hang", 2, kNccl, {"SIMGPU_HANG_AFTER=1"}));
}

TEST(SimNccl, Fp8AverageIsRefusedAtOneRankOnly) {
  expect_all_passed(run_ranks("fp8_avg_one_rank", 1, kNccl, {}));
  // 2 and 4 ranks: "collectives" checks fp8 avg results exactly (1/2 and 1/4 are fp8 numbers).
}

TEST(SimNccl, Fp8ReductionsNeedComputeCapability90) {
  expect_all_passed(run_ranks("fp8_cc80", 2, kNccl, {"SIMGPU_COMPUTE_CAPABILITY=8.0"}));
}

}  // namespace
