// Fault and refusal scenarios of one simulated-NCCL rank (nccl_rank_faults.hpp).
#include "nccl_rank_faults.hpp"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nccl_rank_api.hpp"
#include "nccl_rank_util.hpp"

using namespace rank_util;

namespace rank_faults {

void mismatch(const ncclUniqueId& id, cudaStream_t s) {
  ncclComm_t comm = init_blocking(id);
  Dev buf(8192);
  const size_t count = g_rank == 0 ? 100 : 200;
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, count, ncclFloat32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));  // completes (with an error) instead of hanging
  ncclResult_t a = ncclSuccess;
  NCCL_OK(g->ncclCommGetAsyncError(comm, &a));
  CHECK(a == ncclInvalidUsage, "mismatched counts: async error %d, expected ncclInvalidUsage", a);
  const std::string msg = g->ncclGetLastError(comm);
  CHECK(msg.find("count=100") != std::string::npos && msg.find("count=200") != std::string::npos,
        "message does not name both calls: %s", msg.c_str());
  std::fprintf(stderr, "rank %d: %s\n", g_rank, msg.c_str());
  CHECK(g->ncclAllReduce(buf.p, buf.p, 10, ncclFloat32, ncclSum, comm, s) == ncclInvalidUsage,
        "a broken communicator accepted another op");
  CHECK(g->ncclCommDestroy(comm) == ncclInvalidUsage, "destroy of a broken communicator succeeded");
  NCCL_OK(g->ncclCommAbort(comm));
}

void duplicate_gpu(const ncclUniqueId& id) {
  ncclComm_t comm = nullptr;
  ncclResult_t r = g->ncclCommInitRank(&comm, g_n, id, g_rank);
  CHECK(r == ncclInvalidUsage, "two ranks on one GPU: init returned %d, expected ncclInvalidUsage", r);
  const std::string msg = g->ncclGetLastError(nullptr);
  CHECK(msg.find("Duplicate GPU detected") != std::string::npos, "last error: %s", msg.c_str());
  // As in NCCL, the failed communicator still exists: destroy refuses it, abort frees it.
  CHECK(comm != nullptr, "no communicator handle after a failed init");
  CHECK(g->ncclCommDestroy(comm) == ncclInvalidUsage, "destroy of a failed communicator succeeded");
  NCCL_OK(g->ncclCommAbort(comm));
}

void abort_then_use(const ncclUniqueId& id, cudaStream_t s) {
  ncclComm_t comm = init_blocking(id);
  Dev buf(64);
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, 16, ncclInt32, ncclSum, comm, s));
  settle(comm, s, "allreduce before abort");
  NCCL_OK(g->ncclCommAbort(comm));
  ncclResult_t r = g->ncclAllReduce(buf.p, buf.p, 16, ncclInt32, ncclSum, comm, s);
  CHECK(r == ncclInvalidArgument, "op on an aborted communicator returned %d", r);
  const std::string msg = g->ncclGetLastError(nullptr);
  CHECK(msg.find("use after free") != std::string::npos, "last error: %s", msg.c_str());
  ncclResult_t a;
  CHECK(g->ncclCommGetAsyncError(comm, &a) == ncclInvalidArgument, "GetAsyncError on an aborted communicator");
}

void fault_init(const ncclUniqueId& id) {
  ncclComm_t comm = nullptr;
  ncclResult_t r = g->ncclCommInitRank(&comm, g_n, id, g_rank);
  if (g_rank == 1) {
    CHECK(r == ncclSystemError, "SIMGPU_FAIL_COMM_INIT: rank 1 init returned %d", r);
  } else {
    CHECK(r != ncclSuccess, "rank 0 init succeeded although rank 1 never joined");
    std::fprintf(stderr, "rank 0: init gave up: %s\n", g->ncclGetLastError(nullptr));
  }
  NCCL_OK(g->ncclCommAbort(comm));
}

void fault_async(const ncclUniqueId& id, cudaStream_t s) {
  ncclComm_t comm = init_blocking(id);
  Dev buf(64);
  for (int i = 0; i < 2; ++i) {
    NCCL_OK(g->ncclAllReduce(buf.p, buf.p, 16, ncclInt32, ncclSum, comm, s));
    settle(comm, s, "allreduce before the injected error");
  }
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, 16, ncclInt32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  ncclResult_t a = ncclSuccess;
  NCCL_OK(g->ncclCommGetAsyncError(comm, &a));
  if (g_rank == 1)
    CHECK(a == ncclSystemError, "SIMGPU_ASYNC_ERROR_AFTER=2 on rank 1: async error %d", a);
  else
    CHECK(a == ncclRemoteError || a == ncclSystemError, "rank 0 did not see rank 1's failure: %d", a);
  std::fprintf(stderr, "rank %d: async error %d: %s\n", g_rank, a, g->ncclGetLastError(comm));
  NCCL_OK(g->ncclCommAbort(comm));
}

void fault_hang(const ncclUniqueId& id, cudaStream_t s) {
  ncclComm_t comm = init_blocking(id);
  Dev buf(64);
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, 16, ncclInt32, ncclSum, comm, s));
  settle(comm, s, "first allreduce");
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, 16, ncclInt32, ncclSum, comm, s));
  for (int i = 0; i < 20; ++i) {
    CHECK(cudaStreamQuery(s) == cudaErrorNotReady, "SIMGPU_HANG_AFTER=1: the second op completed");
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  NCCL_OK(g->ncclCommAbort(comm));  // frees the hung op
  CUDA_OK(cudaStreamSynchronize(s));
}

// Rank 1 exits (like a crash) right after init; rank 0's next op must fail with ncclRemoteError.
void peer_exit(const ncclUniqueId& id, cudaStream_t s) {
  ncclComm_t comm = init_blocking(id);
  if (g_rank == 1) std::_Exit(0);
  Dev buf(64);
  NCCL_OK(g->ncclGroupStart());
  NCCL_OK(g->ncclRecv(buf.p, 16, ncclInt32, 1, comm, s));
  NCCL_OK(g->ncclSend(buf.p, 16, ncclInt32, 1, comm, s));
  NCCL_OK(g->ncclGroupEnd());
  CUDA_OK(cudaStreamSynchronize(s));
  ncclResult_t a = ncclSuccess;
  NCCL_OK(g->ncclCommGetAsyncError(comm, &a));
  CHECK(a == ncclRemoteError, "after the peer exited: async error %d, expected ncclRemoteError", a);
  std::fprintf(stderr, "rank 0: %s\n", g->ncclGetLastError(comm));
  NCCL_OK(g->ncclCommAbort(comm));
}

// SIMGPU_NCCL_COMM_MEMORY=8MiB: a communicator holds that much device memory from its first op to
// destroy (NCCL >= 2.22 allocates its buffers at run time, not at init).
void comm_memory(const ncclUniqueId& id, cudaStream_t s) {
  size_t free0 = 0, free1 = 0, free2 = 0, total = 0;
  Dev buf(64);
  CUDA_OK(cudaMemGetInfo(&free0, &total));
  ncclComm_t comm = init_blocking(id);
  CUDA_OK(cudaMemGetInfo(&free1, &total));
  CHECK(free0 == free1, "init took %zu bytes; NCCL's buffers come at the first op", free0 - free1);
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, 4, ncclFloat32, ncclSum, comm, s));
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaMemGetInfo(&free1, &total));
  CHECK(free0 - free1 == size_t{8} << 20, "after the first op the communicator took %zu bytes, expected 8 MiB",
        free0 - free1);
  NCCL_OK(g->ncclCommDestroy(comm));
  CUDA_OK(cudaMemGetInfo(&free2, &total));
  CHECK(free2 == free0, "destroy did not give the communicator's memory back");
}

void single_rank(const ncclUniqueId& id, cudaStream_t s) {
  nonblocking(id, s);
  // ncclMemAlloc draws on device memory like cudaMalloc (SIMGPU_DEVICE_MEMORY=16MiB here).
  void* p = nullptr;
  CHECK(g->ncclMemAlloc(&p, 32 << 20) == ncclUnhandledCudaError, "ncclMemAlloc beyond device memory succeeded");
  NCCL_OK(g->ncclMemAlloc(&p, 1 << 20));
  NCCL_OK(g->ncclMemFree(p));
}

void fp8_needs_sm90(const ncclUniqueId& id, cudaStream_t s) {
  ncclComm_t comm = init_blocking(id);
  Dev buf(256);
  ncclResult_t r = g->ncclAllReduce(buf.p, buf.p, 16, ncclFloat8e4m3, ncclSum, comm, s);
  CHECK(r == ncclInvalidArgument, "fp8 allreduce at cc 8.0 returned %d", r);
  NCCL_OK(g->ncclAllGather(buf.p, buf.c() + 128, 16, ncclFloat8e5m2, comm, s));  // no reduction: fine
  settle(comm, s, "fp8 allgather");
  NCCL_OK(g->ncclCommDestroy(comm));
}

// NCCL 2.28.9 has no one-rank kernel for an fp8 average (seen on an H200): refused at the call,
// while other fp8 reductions and other averages run. From 2 ranks on fp8 avg runs ("collectives").
void fp8_avg_one_rank(const ncclUniqueId& id, cudaStream_t s) {
  ncclComm_t comm = init_blocking(id);
  Dev buf(256);
  for (ncclDataType_t t : {ncclFloat8e4m3, ncclFloat8e5m2}) {
    CHECK(g->ncclAllReduce(buf.p, buf.p, 16, t, ncclAvg, comm, s) == ncclInvalidArgument, "fp8 avg allreduce accepted");
    CHECK(g->ncclReduce(buf.p, buf.p, 16, t, ncclAvg, 0, comm, s) == ncclInvalidArgument, "fp8 avg reduce accepted");
    NCCL_OK(g->ncclAllReduce(buf.p, buf.p, 16, t, ncclSum, comm, s));
  }
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, 16, ncclFloat16, ncclAvg, comm, s));
  settle(comm, s, "one-rank reductions");
  NCCL_OK(g->ncclCommDestroy(comm));
}

}  // namespace rank_faults
