// Exported NCCL entry points: groups, collectives, point-to-point, memory, registration, custom ops.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "../common/knobs.hpp"
#include "../common/simgpu_private.h"
#include "api.hpp"
#include "engine.hpp"
#include "transport.hpp"

namespace simgpu {
namespace {

struct Pending {
  ncclComm* comm;
  OpDesc op;
  cudaStream_t stream;
};

thread_local int t_depth = 0;
thread_local std::vector<Pending> t_pending;
thread_local ncclResult_t t_group_error = ncclSuccess;

ncclResult_t check_buffer(Comm& c, const char* fn, const char* which, const void* p, size_t bytes) {
  if (bytes == 0) return ncclSuccess;
  int phys = -1;
  if (simgpu_device_view(p, bytes, &phys) == nullptr || phys != c.physical) {
    set_last_error("%s : %s %p is not a valid pointer (%zu bytes of device memory of CUDA device %d expected)", fn, which,
                   p, bytes, c.cuda_dev);
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t validate(Comm& c, const OpDesc& op, cudaStream_t stream, const char* fn) {
  if (!dtype_valid(op.dtype)) {
    set_last_error("%s : invalid type %d", fn, static_cast<int>(op.dtype));
    return ncclInvalidArgument;
  }
  const bool reduces = op.kind == OpKind::AllReduce || op.kind == OpKind::Reduce || op.kind == OpKind::ReduceScatter;
  if (reduces) {
    bool known = op.redop < ncclNumOps && static_cast<int>(op.redop) >= 0;
    if (!known) {
      std::lock_guard<std::mutex> lk(c.mu);
      known = c.custom_ops.count(static_cast<int>(op.redop)) != 0;
    }
    if (!known) {
      set_last_error("%s : invalid reduction operation %d", fn, static_cast<int>(op.redop));
      return ncclInvalidArgument;
    }
    if (dtype_is_fp8(op.dtype) && simgpu_compute_capability() < 90) {
      set_last_error("%s : FP8 reduction support begins with sm90 capable devices.", fn);
      return ncclInvalidArgument;
    }
    // NCCL 2.28.9 at one rank (seen on an H200, issue 26): ncclLaunchOneRank has no fp8 kernel for
    // avg (a pre-multiplied sum) and returns ncclInvalidArgument without a message. From 2 ranks
    // on, avg of fp8 is a pre-multiplied sum by 1/n rounded to fp8, as reduce_small computes it.
    if (dtype_is_fp8(op.dtype) && op.redop == ncclAvg && c.nranks == 1) return ncclInvalidArgument;
  }
  const bool rooted = op.kind == OpKind::Broadcast || op.kind == OpKind::Reduce || op.kind == OpKind::Gather ||
                      op.kind == OpKind::Scatter || op.is_p2p();
  if (rooted && (op.root < 0 || op.root >= c.nranks)) {
    set_last_error("%s : %s %d is out of range (nranks %d)", fn, op.is_p2p() ? "peer" : "root", op.root, c.nranks);
    return ncclInvalidArgument;
  }
  cudaStreamCaptureStatus st;
  if (cudaStreamIsCapturing(stream, &st) != cudaSuccess) {
    set_last_error("%s : invalid stream %p", fn, static_cast<void*>(stream));
    return ncclInvalidArgument;
  }
  // NCCL launches on the communicator's device; an explicit stream of another device cannot take that
  // kernel (stream 0 means the communicator device's own default stream).
  if (stream != nullptr && stream != cudaStreamLegacy && stream != cudaStreamPerThread &&
      simgpu_stream_physical(stream) != c.physical) {
    set_last_error("%s : stream %p belongs to another GPU than the communicator's (CUDA device %d): invalid "
                   "resource handle", fn, static_cast<void*>(stream), c.cuda_dev);
    return ncclUnhandledCudaError;
  }
  const size_t es = dtype_size(op.dtype), n = static_cast<size_t>(c.nranks), cnt = op.count;
  const bool root = c.rank == op.root;
  auto sendb = [&](size_t elems) { return check_buffer(c, fn, "sendbuff", op.send, elems * es); };
  auto recvb = [&](size_t elems) { return check_buffer(c, fn, "recvbuff", op.recv, elems * es); };
  ncclResult_t r = ncclSuccess;
  switch (op.kind) {
    case OpKind::AllReduce: if (!(r = sendb(cnt))) r = recvb(cnt); break;
    case OpKind::AllGather: if (!(r = sendb(cnt))) r = recvb(cnt * n); break;
    case OpKind::ReduceScatter: if (!(r = sendb(cnt * n))) r = recvb(cnt); break;
    case OpKind::Broadcast: if (!(r = root ? sendb(cnt) : ncclSuccess)) r = recvb(cnt); break;
    case OpKind::Reduce: if (!(r = sendb(cnt))) r = root ? recvb(cnt) : ncclSuccess; break;
    case OpKind::AllToAll:
      if (op.send == op.recv && cnt > 0 && n > 1) {
        // NCCL's alltoall is not defined in place (nccl-tests refuses it); the simulation says so instead
        // of returning silently wrong data.
        set_last_error("%s : in-place alltoall (sendbuff == recvbuff) is not supported by NCCL", fn);
        return ncclInvalidArgument;
      }
      if (!(r = sendb(cnt * n))) r = recvb(cnt * n);
      break;
    case OpKind::Gather: if (!(r = sendb(cnt))) r = root ? recvb(cnt * n) : ncclSuccess; break;
    case OpKind::Scatter: if (!(r = root ? sendb(cnt * n) : ncclSuccess)) r = recvb(cnt); break;
    case OpKind::Send: r = sendb(cnt); break;
    case OpKind::Recv: r = recvb(cnt); break;
    case OpKind::AllToAllv: {
      size_t s = 0, rv = 0;
      for (size_t j = 0; j < n; ++j) {
        s = std::max(s, op.sdispls[j] + op.scounts[j]);
        rv = std::max(rv, op.rdispls[j] + op.rcounts[j]);
      }
      if (!(r = sendb(s))) r = recvb(rv);
      break;
    }
  }
  return r;
}

std::function<void()> batch_task(ncclComm* c, std::vector<OpDesc> ops, bool counted) {
  return [c, ops = std::move(ops), counted] {
    execute_batch(*c, ops);
    if (counted) {
      std::lock_guard<std::mutex> lk(c->mu);
      --c->inflight;
      c->cv.notify_all();
    }
  };
}

// Puts one communicator's batch on its stream(s). Ops given different streams are joined the way NCCL
// does: the batch waits for all of them and all of them wait for the batch. `counted`: inflight was
// already incremented for this batch.
void enqueue_batch(ncclComm* c, const std::vector<Pending>& items) {
  cudaSetDevice(c->cuda_dev);
  const cudaStream_t main = items.front().stream;
  std::vector<cudaStream_t> others;
  std::vector<OpDesc> ops;
  for (const Pending& p : items) {
    ops.push_back(p.op);
    if (p.stream != main && std::find(others.begin(), others.end(), p.stream) == others.end()) others.push_back(p.stream);
  }
  for (cudaStream_t s : others) {
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    cudaEventRecord(e, s);
    cudaStreamWaitEvent(main, e, 0);
    cudaEventDestroy(e);
  }
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  cudaStreamIsCapturing(main, &st);
  const bool captured = st != cudaStreamCaptureStatusNone;
  if (captured) {  // a graph may replay it any number of times: not counted as in flight
    std::lock_guard<std::mutex> lk(c->mu);
    --c->inflight;
    c->cv.notify_all();
  }
  std::function<void()> fn = batch_task(c, std::move(ops), !captured);
  if (simgpu_stream_enqueue(main, &fn) != cudaSuccess) {
    // The stream went away between the call and a non-blocking launch.
    set_last_error("simulated NCCL: cannot launch on stream %p: invalid resource handle", static_cast<void*>(main));
    c->set_error(ncclUnhandledCudaError);
    if (!captured) {
      std::lock_guard<std::mutex> lk(c->mu);
      --c->inflight;
      c->cv.notify_all();
    }
    return;
  }
  for (cudaStream_t s : others) {
    cudaEvent_t e;
    cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
    cudaEventRecord(e, main);
    cudaStreamWaitEvent(s, e, 0);
    cudaEventDestroy(e);
  }
}

// Launches what a group (or a single ungrouped call) collected. Blocking and single-rank communicators
// are enqueued now; non-blocking ones report ncclInProgress and are put on the stream a little later
// by a background thread, like NCCL's.
ncclResult_t launch(std::vector<Pending> pending) {
  std::vector<ncclComm*> order;
  for (const Pending& p : pending)
    if (std::find(order.begin(), order.end(), p.comm) == order.end()) order.push_back(p.comm);
  ncclResult_t result = ncclSuccess;
  int caller_dev = 0;
  cudaGetDevice(&caller_dev);
  for (ncclComm* c : order) {
    std::vector<Pending> mine;
    for (const Pending& p : pending)
      if (p.comm == c) mine.push_back(p);
    {
      std::lock_guard<std::mutex> lk(c->mu);
      ++c->inflight;
    }
    if (c->blocking || c->nranks == 1) {
      enqueue_batch(c, mine);
      continue;
    }
    c->async = ncclInProgress;
    result = ncclInProgress;
    std::thread([c, mine = std::move(mine)] {
      std::this_thread::sleep_for(std::chrono::milliseconds(launch_delay_ms()));
      bool dead;
      {
        std::lock_guard<std::mutex> lk(c->mu);
        dead = c->dead;
        if (dead) {
          --c->inflight;
          c->cv.notify_all();
        }
      }
      if (dead) return;
      enqueue_batch(c, mine);
      int expected = ncclInProgress;
      c->async.compare_exchange_strong(expected, ncclSuccess);
    }).detach();
  }
  cudaSetDevice(caller_dev);
  return result;
}

}  // namespace

int group_depth() { return t_depth; }

namespace {

// NCCL >= 2.22 (NCCL_RUNTIME_CONNECT=1, its default) connects peers and allocates their buffers at
// the first op that needs them, not at init: SIMGPU_NCCL_COMM_MEMORY is taken here, so a footprint
// measured right after init misses it, as it would on a GPU, and an out-of-memory shows at the op.
ncclResult_t connect_on_first_use(Comm& c, const char* fn) {
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (c.connected) return ncclSuccess;
    c.connected = true;
  }
  const unsigned long long hold = parse_bytes(env("SIMGPU_NCCL_COMM_MEMORY"), 0);
  if (hold > 0 && simgpu_reserve_device_memory(c.physical, hold, &c.reserved) != cudaSuccess) {
    set_last_error("%s : rank %d: cannot allocate %llu bytes of device memory to connect to its peers: "
                   "out of memory", fn, c.rank, hold);
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

// Every op call costs host time like a kernel launch (SIMGPU_LAUNCH_COST_US, default 4 µs): a
// harness that adds host work per op shows it in a host-cost measurement, as on a GPU.
void launch_cost() {
  static const long long us = env_int("SIMGPU_LAUNCH_COST_US", 4);
  if (us <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

ncclResult_t submit(ncclComm_t comm, OpDesc op, cudaStream_t stream, const char* fn) {
  if (ncclResult_t e = check_comm(comm, fn)) return e;
  ncclResult_t e = ensure_ready(*comm);
  if (e == ncclSuccess) {
    std::lock_guard<std::mutex> lk(comm->mu);
    if (comm->finalized) {
      set_last_error("%s : communicator used after ncclCommFinalize", fn);
      e = ncclInvalidUsage;
    }
  }
  if (e == ncclSuccess) e = validate(*comm, op, stream, fn);
  if (e == ncclSuccess) e = connect_on_first_use(*comm, fn);
  if (e != ncclSuccess) {
    if (t_depth > 0 && t_group_error == ncclSuccess) t_group_error = e;
    return e;
  }
  launch_cost();
  if (t_depth > 0) {
    t_pending.push_back(Pending{comm, std::move(op), stream});
    return ncclSuccess;
  }
  return launch({Pending{comm, std::move(op), stream}});
}

}  // namespace simgpu

using namespace simgpu;

NCCL_API_EXPORT ncclResult_t ncclGroupStart() {
  ++t_depth;
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclGroupEnd() {
  if (t_depth == 0) {
    set_last_error("ncclGroupEnd: not in a group call.");
    return ncclInvalidUsage;
  }
  if (--t_depth > 0) return ncclSuccess;
  std::vector<Pending> pending = std::move(t_pending);
  t_pending.clear();
  std::vector<Comm*> inits = std::move(t_group_inits);
  t_group_inits.clear();
  const ncclResult_t group_error = t_group_error;
  t_group_error = ncclSuccess;
  ncclResult_t result = ncclSuccess;
  for (Comm* c : inits) {  // blocking inits started inside the group complete here
    std::unique_lock<std::mutex> lk(c->mu);
    c->cv.wait(lk, [&] { return c->running == 0; });
    if (c->async.load() != ncclSuccess && result == ncclSuccess) result = static_cast<ncclResult_t>(c->async.load());
  }
  if (group_error != ncclSuccess) return group_error;  // an op of the group was refused: none is launched
  if (result != ncclSuccess) return result;
  if (pending.empty()) return ncclSuccess;
  return launch(std::move(pending));
}

namespace {
OpDesc make(OpKind k, const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op = ncclSum, int root = 0) {
  OpDesc d;
  d.kind = k;
  d.send = s;
  d.recv = r;
  d.count = count;
  d.dtype = t;
  d.redop = op;
  d.root = root;
  return d;
}
}  // namespace

NCCL_API_EXPORT ncclResult_t ncclAllReduce(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                           ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, make(OpKind::AllReduce, s, r, count, t, op), stream, "ncclAllReduce");
}
NCCL_API_EXPORT ncclResult_t ncclAllGather(const void* s, void* r, size_t count, ncclDataType_t t, ncclComm_t comm,
                                           cudaStream_t stream) {
  return submit(comm, make(OpKind::AllGather, s, r, count, t), stream, "ncclAllGather");
}
NCCL_API_EXPORT ncclResult_t ncclReduceScatter(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                               ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, make(OpKind::ReduceScatter, s, r, count, t, op), stream, "ncclReduceScatter");
}
NCCL_API_EXPORT ncclResult_t ncclBroadcast(const void* s, void* r, size_t count, ncclDataType_t t, int root,
                                           ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, make(OpKind::Broadcast, s, r, count, t, ncclSum, root), stream, "ncclBroadcast");
}
NCCL_API_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                                       cudaStream_t stream) {
  return submit(comm, make(OpKind::Broadcast, buff, buff, count, t, ncclSum, root), stream, "ncclBcast");
}
NCCL_API_EXPORT ncclResult_t ncclReduce(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                        int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, make(OpKind::Reduce, s, r, count, t, op, root), stream, "ncclReduce");
}
NCCL_API_EXPORT ncclResult_t ncclAlltoAll(const void* s, void* r, size_t count, ncclDataType_t t, ncclComm_t comm,
                                          cudaStream_t stream) {
  return submit(comm, make(OpKind::AllToAll, s, r, count, t), stream, "ncclAlltoAll");
}
NCCL_API_EXPORT ncclResult_t ncclGather(const void* s, void* r, size_t count, ncclDataType_t t, int root,
                                        ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, make(OpKind::Gather, s, r, count, t, ncclSum, root), stream, "ncclGather");
}
NCCL_API_EXPORT ncclResult_t ncclScatter(const void* s, void* r, size_t count, ncclDataType_t t, int root,
                                         ncclComm_t comm, cudaStream_t stream) {
  return submit(comm, make(OpKind::Scatter, s, r, count, t, ncclSum, root), stream, "ncclScatter");
}
NCCL_API_EXPORT ncclResult_t ncclSend(const void* s, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                                      cudaStream_t stream) {
  return submit(comm, make(OpKind::Send, s, nullptr, count, t, ncclSum, peer), stream, "ncclSend");
}
NCCL_API_EXPORT ncclResult_t ncclRecv(void* r, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                                      cudaStream_t stream) {
  return submit(comm, make(OpKind::Recv, nullptr, r, count, t, ncclSum, peer), stream, "ncclRecv");
}

NCCL_API_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return ncclInvalidArgument;
  cudaError_t e = cudaMalloc(ptr, size);
  if (e != cudaSuccess) {
    set_last_error("ncclMemAlloc: cudaMalloc(%zu) failed: %s", size, cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  // NCCL does not check this; peers may still have the memory mapped. Logged for the tests.
  if (const int rank = registered_by(ptr); rank >= 0)
    SIMGPU_LOG("nccl: ncclMemFree(%p) of a buffer rank %d still has registered", ptr, rank);
  cudaError_t e = cudaFree(ptr);
  if (e != cudaSuccess) {
    set_last_error("ncclMemFree(%p): %s", ptr, cudaGetErrorString(e));
    return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  if (ncclResult_t e = check_comm(comm, "ncclCommRegister")) return e;
  if (handle == nullptr) return ncclInvalidArgument;
  int phys = -1;
  if (simgpu_device_view(buff, size, &phys) == nullptr || phys != comm->physical) {
    set_last_error("ncclCommRegister: %p (%zu bytes) is not device memory of the communicator's GPU", buff, size);
    return ncclInvalidArgument;
  }
  // NCCL_LOCAL_REGISTER=0: NCCL declines, successfully, with a null handle.
  if (const char* v = env("NCCL_LOCAL_REGISTER"); v != nullptr && std::strcmp(v, "0") == 0) {
    *handle = nullptr;
    SIMGPU_LOG("nccl: rank %d registration declined (NCCL_LOCAL_REGISTER=0)", comm->rank);
    return ncclSuccess;
  }
  auto* h = new char[1];
  std::lock_guard<std::mutex> lk(comm->mu);
  comm->registrations[h] = {static_cast<const char*>(buff), size};
  *handle = h;
  SIMGPU_LOG("nccl: rank %d buffer registered (%zu bytes)", comm->rank, size);
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  if (ncclResult_t e = check_comm(comm, "ncclCommDeregister")) return e;
  if (handle == nullptr) return ncclSuccess;  // as NCCL: a declined registration's handle
  std::lock_guard<std::mutex> lk(comm->mu);
  if (comm->registrations.erase(handle) == 0) {
    set_last_error("ncclCommDeregister: unknown handle %p", handle);
    return ncclInvalidArgument;
  }
  delete[] static_cast<char*>(handle);
  SIMGPU_LOG("nccl: rank %d buffer deregistered", comm->rank);
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t t,
                                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  if (ncclResult_t e = check_comm(comm, "ncclRedOpCreatePreMulSum")) return e;
  if (op == nullptr || scalar == nullptr || !dtype_valid(t)) return ncclInvalidArgument;
  Reduction r;
  r.premul = true;
  if (residence == ncclScalarHostImmediate) {
    r.scalar = dtype_load(t, scalar, 0);
  } else {
    // Simplification: NCCL reads a device scalar when the collective runs; the simulation reads it now.
    const void* view = simgpu_device_view(scalar, dtype_size(t), nullptr);
    if (view == nullptr) {
      set_last_error("ncclRedOpCreatePreMulSum: scalar %p is not device memory", scalar);
      return ncclInvalidArgument;
    }
    r.scalar = dtype_load(t, view, 0);
  }
  std::lock_guard<std::mutex> lk(comm->mu);
  const int id = comm->next_op++;
  comm->custom_ops[id] = r;
  *op = static_cast<ncclRedOp_t>(id);
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  if (ncclResult_t e = check_comm(comm, "ncclRedOpDestroy")) return e;
  std::lock_guard<std::mutex> lk(comm->mu);
  if (comm->custom_ops.erase(static_cast<int>(op)) == 0) return ncclInvalidArgument;
  return ncclSuccess;
}
