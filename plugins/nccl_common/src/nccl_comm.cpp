#include "nccl_comm.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/plugin_error.hpp"
#include "nccl_types.h"

cb_comm::~cb_comm() {
  using namespace commbench::nccl_backend;
  for (auto& [p, type] : allocations) {
    if (type == CB_MEM_HOST_PINNED) cudaFreeHost(p);
    else if (type == CB_MEM_CUDA && backend.options.registration && backend.api.MemFree) backend.api.MemFree(p);
    else if (type == CB_MEM_CUDA) cudaFree(p);
    else std::free(p);
  }
  if (barrier_buffer) cudaFree(barrier_buffer);
  if (stream) cudaStreamDestroy(stream);
}

cb_request::~cb_request() {
  if (done) cudaEventDestroy(done);
}

namespace commbench::nccl_backend {
namespace {

using Clock = std::chrono::steady_clock;

// Waits for a non-blocking communicator call to leave ncclInProgress; aborts it at the deadline.
void settle(cb_comm& c, Clock::time_point deadline, const char* what) {
  for (;;) {
    ncclResult_t state = ncclSuccess;
    check_nccl(c.backend.api, c.nccl, "ncclCommGetAsyncError", c.backend.api.CommGetAsyncError(c.nccl, &state));
    if (state != ncclInProgress) {
      check_nccl(c.backend.api, c.nccl, what, state);
      return;
    }
    if (Clock::now() >= deadline) {
      c.backend.api.CommAbort(c.nccl);
      c.aborted = true;
      sdk::fail(CB_ERR_TIMEOUT, std::string(what) + " did not complete within the timeout; communicator aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

ncclDataType_t dtype_of(const cb_backend& b, cb_dtype d) {
  const auto t = nccl_dtype(d, b.version);
  if (!t) sdk::fail(CB_ERR_UNIMPLEMENTED, "dtype " + std::string(sdk::dtype_name(d)) + " needs NCCL >= 2.24");
  return *t;
}

}  // namespace

std::unique_ptr<cb_comm> create_nccl_comm(cb_backend& b, int32_t timeout_ms) {
  const auto deadline = timeout_ms < 0 ? Clock::now() + b.options.timeout
                                       : Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto c = std::make_unique<cb_comm>(b);
  check_cuda("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  check_cuda("cudaMalloc", cudaMalloc(&c->barrier_buffer, sizeof(float)));
  ncclUniqueId id{};
  if (b.host.rank == 0) check_nccl(b.api, nullptr, "ncclGetUniqueId", b.api.GetUniqueId(&id));
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (b.host.bootstrap_broadcast(b.host.ctx, &id, sizeof(id), 0, static_cast<int32_t>(std::max<int64_t>(left, 1))) != CB_OK)
    sdk::fail(CB_ERR_REMOTE, "broadcasting the ncclUniqueId through the host's bootstrap failed");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Non-blocking by default here, so that a peer that never arrives cannot hang init: the
  // deadline above aborts it instead.
  config.blocking = b.options.blocking.value_or(0);
  if (b.options.cga_cluster_size) config.cgaClusterSize = *b.options.cga_cluster_size;
  if (b.options.min_ctas) config.minCTAs = *b.options.min_ctas;
  if (b.options.max_ctas) config.maxCTAs = *b.options.max_ctas;
  if (!b.options.net_name.empty()) config.netName = b.options.net_name.c_str();
  check_nccl(b.api, nullptr, "ncclCommInitRankConfig",
             b.api.CommInitRankConfig(&c->nccl, b.host.world_size, id, b.host.rank, &config));
  settle(*c, deadline, "ncclCommInitRankConfig");
  return c;
}

void destroy_nccl_comm(std::unique_ptr<cb_comm> c) {
  const NcclApi& api = c->backend.api;
  if (c->nccl && !c->aborted) {
    check_cuda("cudaStreamSynchronize", cudaStreamSynchronize(c->stream));
    check_nccl(api, c->nccl, "ncclCommFinalize", api.CommFinalize(c->nccl));
    settle(*c, Clock::now() + c->backend.options.timeout, "ncclCommFinalize");
    check_nccl(api, c->nccl, "ncclCommDestroy", api.CommDestroy(c->nccl));
  }
}

void abort_nccl_comm(std::unique_ptr<cb_comm> c) {
  if (c->nccl && !c->aborted) c->backend.api.CommAbort(c->nccl);
  c->aborted = true;
}

std::unique_ptr<cb_request> post_nccl(cb_comm& c, const cb_op_args& a) {
  const cb_backend& b = c.backend;
  const NcclApi& api = b.api;
  if (a.struct_size < CB_STRUCT_SIZE(cb_op_args, stream)) sdk::fail(CB_ERR_INVALID_ARGUMENT, "cb_op_args.struct_size is too small");
  if (a.mem_type != CB_MEM_CUDA) sdk::fail(CB_ERR_UNIMPLEMENTED, "NCCL runs on cuda memory only");
  if (c.aborted) sdk::fail(CB_ERR_REMOTE, "the communicator was aborted after an earlier error");
  cudaStream_t s = a.stream ? static_cast<cudaStream_t>(a.stream) : c.stream;
  const int n = b.host.world_size, me = b.host.rank;
  const size_t es = sdk::dtype_size(a.dtype);
  auto red = [&] {
    const auto r = nccl_redop(a.redop);
    if (!r) sdk::fail(CB_ERR_UNIMPLEMENTED, "unknown reduce op");
    return *r;
  };
  auto call = [&](const char* what, ncclResult_t r) { check_nccl(api, c.nccl, what, r); };
  switch (a.op) {
    case CB_OP_ALLREDUCE: call("ncclAllReduce", api.AllReduce(a.sendbuf, a.recvbuf, a.count, dtype_of(b, a.dtype), red(), c.nccl, s)); break;
    case CB_OP_ALLGATHER: call("ncclAllGather", api.AllGather(a.sendbuf, a.recvbuf, a.count, dtype_of(b, a.dtype), c.nccl, s)); break;
    case CB_OP_REDUCESCATTER: call("ncclReduceScatter", api.ReduceScatter(a.sendbuf, a.recvbuf, a.count, dtype_of(b, a.dtype), red(), c.nccl, s)); break;
    case CB_OP_BROADCAST: call("ncclBroadcast", api.Broadcast(a.sendbuf, a.recvbuf, a.count, dtype_of(b, a.dtype), a.root, c.nccl, s)); break;
    case CB_OP_REDUCE: call("ncclReduce", api.Reduce(a.sendbuf, a.recvbuf, a.count, dtype_of(b, a.dtype), red(), a.root, c.nccl, s)); break;
    case CB_OP_SEND: call("ncclSend", api.Send(a.sendbuf, a.count, dtype_of(b, a.dtype), a.peer, c.nccl, s)); break;
    case CB_OP_RECV: call("ncclRecv", api.Recv(a.recvbuf, a.count, dtype_of(b, a.dtype), a.peer, c.nccl, s)); break;
    case CB_OP_BARRIER: call("ncclAllReduce (barrier)", api.AllReduce(c.barrier_buffer, c.barrier_buffer, 1, ncclFloat32, ncclSum, c.nccl, s)); break;
    case CB_OP_ALLTOALL:
    case CB_OP_GATHER:
    case CB_OP_SCATTER: {
      const ncclDataType_t t = dtype_of(b, a.dtype);
      if (a.op == CB_OP_ALLTOALL && api.AlltoAll) { call("ncclAlltoAll", api.AlltoAll(a.sendbuf, a.recvbuf, a.count, t, c.nccl, s)); break; }
      if (a.op == CB_OP_GATHER && api.Gather) { call("ncclGather", api.Gather(a.sendbuf, a.recvbuf, a.count, t, a.root, c.nccl, s)); break; }
      if (a.op == CB_OP_SCATTER && api.Scatter) { call("ncclScatter", api.Scatter(a.sendbuf, a.recvbuf, a.count, t, a.root, c.nccl, s)); break; }
      // Older NCCL: the same exchange as grouped send/recv, one launch.
      const auto block = [&](const void* base, int r) { return static_cast<const char*>(base) + static_cast<size_t>(r) * a.count * es; };
      call("ncclGroupStart", api.GroupStart());
      for (int r = 0; r < n; ++r) {
        if (a.op == CB_OP_ALLTOALL) {
          call("ncclSend", api.Send(block(a.sendbuf, r), a.count, t, r, c.nccl, s));
          call("ncclRecv", api.Recv(const_cast<char*>(block(a.recvbuf, r)), a.count, t, r, c.nccl, s));
        } else if (a.op == CB_OP_GATHER) {
          if (r == 0) call("ncclSend", api.Send(a.sendbuf, a.count, t, a.root, c.nccl, s));
          if (me == a.root) call("ncclRecv", api.Recv(const_cast<char*>(block(a.recvbuf, r)), a.count, t, r, c.nccl, s));
        } else {
          if (me == a.root) call("ncclSend", api.Send(block(a.sendbuf, r), a.count, t, r, c.nccl, s));
          if (r == 0) call("ncclRecv", api.Recv(a.recvbuf, a.count, t, a.root, c.nccl, s));
        }
      }
      call("ncclGroupEnd", api.GroupEnd());
      break;
    }
    default: sdk::fail(CB_ERR_UNIMPLEMENTED, "op " + std::to_string(a.op) + " is not known to this plugin");
  }
  auto req = std::make_unique<cb_request>();
  req->comm = &c;
  check_cuda("cudaEventCreateWithFlags", cudaEventCreateWithFlags(&req->done, cudaEventDisableTiming));
  check_cuda("cudaEventRecord", cudaEventRecord(req->done, s));
  return req;
}

bool test_nccl(cb_request& r) {
  const cudaError_t e = cudaEventQuery(r.done);
  if (e == cudaSuccess) return true;
  if (e != cudaErrorNotReady) check_cuda("cudaEventQuery", e);
  cb_comm& c = *r.comm;
  ncclResult_t state = ncclSuccess;
  check_nccl(c.backend.api, c.nccl, "ncclCommGetAsyncError", c.backend.api.CommGetAsyncError(c.nccl, &state));
  if (state != ncclSuccess && state != ncclInProgress) {
    c.backend.api.CommAbort(c.nccl);  // a dead peer must not leave kernels spinning
    c.aborted = true;
    check_nccl(c.backend.api, nullptr, "NCCL asynchronous error", state);
  }
  return false;
}

void wait_nccl(cb_request& r, int32_t timeout_ms) {
  const auto deadline = Clock::now() + (timeout_ms < 0 ? r.comm->backend.options.timeout
                                                       : std::chrono::milliseconds(timeout_ms));
  while (!test_nccl(r)) {
    if (Clock::now() >= deadline) {
      r.comm->backend.api.CommAbort(r.comm->nccl);
      r.comm->aborted = true;
      sdk::fail(CB_ERR_TIMEOUT, "the NCCL op did not complete within the timeout (a peer did not take part?); "
                                "communicator aborted");
    }
    std::this_thread::yield();
  }
}

void* alloc_nccl(cb_comm& c, cb_mem type, size_t bytes) {
  void* p = nullptr;
  if (type == CB_MEM_CUDA) {
    if (c.backend.options.registration) {
      if (!c.backend.api.MemAlloc) sdk::fail(CB_ERR_UNIMPLEMENTED, "registration = on needs ncclMemAlloc (NCCL >= 2.19)");
      check_nccl(c.backend.api, c.nccl, "ncclMemAlloc", c.backend.api.MemAlloc(&p, bytes));
    } else {
      check_cuda("cudaMalloc", cudaMalloc(&p, bytes));
    }
  } else if (type == CB_MEM_HOST_PINNED) {
    check_cuda("cudaHostAlloc", cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  } else {
    p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!p) sdk::fail(CB_ERR_RESOURCE_EXHAUSTED, "cannot allocate " + std::to_string(bytes) + " bytes");
  }
  c.allocations.emplace(p, type);
  return p;
}

void free_nccl(cb_comm& c, void* p) {
  const auto it = c.allocations.find(p);
  if (it == c.allocations.end()) sdk::fail(CB_ERR_INVALID_ARGUMENT, "mem_free of a pointer mem_alloc did not return");
  const cb_mem type = it->second;
  c.allocations.erase(it);
  if (type == CB_MEM_HOST_PINNED) check_cuda("cudaFreeHost", cudaFreeHost(p));
  else if (type == CB_MEM_CUDA && c.backend.options.registration) check_nccl(c.backend.api, c.nccl, "ncclMemFree", c.backend.api.MemFree(p));
  else if (type == CB_MEM_CUDA) check_cuda("cudaFree", cudaFree(p));
  else std::free(p);
}

}  // namespace commbench::nccl_backend
