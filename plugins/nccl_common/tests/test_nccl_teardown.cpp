// The nccl plugin on the simulated GPU (ctest puts tests/simgpu first on LD_LIBRARY_PATH).
//
// Its request events come from a pool filled when the communicator is created: posting ops (the
// per-iteration method's timed path) creates none.
//
// Its teardown (the child sets SIMGPU_HANG_AFTER=0: every op hangs until ncclCommAbort): an op posted
// on a stream of the caller's (the core passes its own) that never finishes must not hang
// comm_destroy: the teardown waits for every stream the communicator's ops ran on, with the
// plugin's timeout, then aborts. Waiting on the communicator's own stream only, as it once did,
// goes on into ncclCommFinalize, which blocks on the unfinished op for ever.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "commbench/sdk/plugin_error.hpp"
#include "nccl_api.h"
#include "nccl_backend.h"
#include "nccl_comm.h"

namespace commbench::nccl_backend {
namespace {

// A one-rank host: the bootstrap collectives have nothing to exchange.
cb_host_services one_rank_host(const cb_option* options, size_t count) {
  cb_host_services h{};
  h.struct_size = CB_STRUCT_SIZE(cb_host_services, flags);
  h.world_size = 1;
  h.local_world_size = 1;
  h.options = options;
  h.num_options = count;
  h.log = [](void*, cb_log_level, const char*) {};
  h.bootstrap_allgather = [](void*, const void* send, size_t bytes, void* recv, int32_t) {
    std::memcpy(recv, send, bytes);
    return CB_OK;
  };
  h.bootstrap_broadcast = [](void*, void*, size_t, int32_t, int32_t) { return CB_OK; };
  h.bootstrap_barrier = [](void*, int32_t) { return CB_OK; };
  h.kv_set = [](void*, const char*, const void*, size_t, int32_t) { return CB_OK; };
  h.kv_get = [](void*, const char*, void*, size_t, size_t* length, int32_t) {
    *length = 0;
    return CB_ERR_TIMEOUT;
  };
  return h;
}

// The scenario, in a child process (the parent bounds it: the old teardown never returned).
// Exit 0: comm_destroy failed with a timeout in time; 1..: what went wrong instead.
int hung_op_on_the_callers_stream() {
  ::setenv("SIMGPU_HANG_AFTER", "0", 1);  // read by the simulated NCCL when an op runs
  const cb_option timeout{CB_STRUCT_SIZE(cb_option, value), "timeout_ms", "1000"};
  const cb_host_services host = one_rank_host(&timeout, 1);
  try {
    auto backend = create_nccl_backend(host, "nccl", [](const NcclOptions&) { return load_nccl_api("libnccl.so.2"); });
    auto comm = create_nccl_comm(*backend, 10000);
    cudaStream_t callers = nullptr;
    void* buf = nullptr;
    if (cudaStreamCreateWithFlags(&callers, cudaStreamNonBlocking) != cudaSuccess || cudaMalloc(&buf, 4096) != cudaSuccess)
      return 2;
    cb_op_args a{};
    a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
    a.op = CB_OP_ALLREDUCE;
    a.sendbuf = a.recvbuf = buf;
    a.count = 1024;
    a.dtype = CB_DTYPE_F32;
    a.redop = CB_REDOP_SUM;
    a.mem_type = CB_MEM_CUDA;
    a.stream = callers;
    enqueue_nccl(*comm, a);  // hangs on `callers` (SIMGPU_HANG_AFTER=0)
    const auto t0 = std::chrono::steady_clock::now();
    try {
      destroy_nccl_comm(std::move(comm));
      return 3;  // returned as if nothing were pending
    } catch (const sdk::PluginError& e) {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (e.code() != CB_ERR_TIMEOUT) return 4;
      if (std::strstr(e.what(), "aborted") == nullptr) return 5;
      return s < 8 ? 0 : 6;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected: %s\n", e.what());
    return 7;
  }
}

// Events the simulated runtime has created in this process (its private counter).
unsigned long long events_created() {
  using Fn = unsigned long long (*)();
  static const auto fn = reinterpret_cast<Fn>(::dlsym(RTLD_DEFAULT, "simgpu_events_created"));
  return fn ? fn() : 0;
}

TEST(NcclPlugin, PostingOpsCreatesNoEvent) {
  if (::dlsym(RTLD_DEFAULT, "simgpu_events_created") == nullptr)
    GTEST_SKIP() << "needs the simulated GPU first on LD_LIBRARY_PATH (run through ctest)";
  const cb_host_services host = one_rank_host(nullptr, 0);
  auto backend = create_nccl_backend(host, "nccl", [](const NcclOptions&) { return load_nccl_api("libnccl.so.2"); });
  auto comm = create_nccl_comm(*backend, 10000);
  void* buf = nullptr;
  ASSERT_EQ(cudaMalloc(&buf, 4096), cudaSuccess);
  cb_op_args a{};
  a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
  a.op = CB_OP_ALLREDUCE;
  a.sendbuf = a.recvbuf = buf;
  a.count = 1024;
  a.dtype = CB_DTYPE_F32;
  a.redop = CB_REDOP_SUM;
  a.mem_type = CB_MEM_CUDA;
  const unsigned long long before = events_created();
  // A window of requests in flight at once (the p2p patterns' default window is 64), then more.
  std::vector<std::unique_ptr<cb_request>> window;
  for (int i = 0; i < 64; ++i) window.push_back(post_nccl(*comm, a));
  for (auto& r : window) wait_nccl(*r, 10000);
  window.clear();
  for (int i = 0; i < 200; ++i) wait_nccl(*post_nccl(*comm, a), 10000);
  EXPECT_EQ(events_created(), before) << "posts created events on the timed path";
  cudaFree(buf);
  destroy_nccl_comm(std::move(comm));
}

TEST(NcclTeardown, WaitsForTheStreamTheOpsRanOnThenAborts) {
  const char* ld = std::getenv("LD_LIBRARY_PATH");
  if (ld == nullptr || std::string(ld).find("simgpu") == std::string::npos)
    GTEST_SKIP() << "needs the simulated GPU first on LD_LIBRARY_PATH (run through ctest)";
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(hung_op_on_the_callers_stream());
  int status = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL() << "comm_destroy did not return within 60 s with an op hung on the caller's stream";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no stream or buffer; 3: destroy returned success; 4: not a timeout; "
                                       "5: no abort said; 6: too slow; 7: another error";
}

}  // namespace
}  // namespace commbench::nccl_backend
