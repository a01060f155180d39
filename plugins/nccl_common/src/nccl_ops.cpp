// Posting ops on a communicator, completing them, and groups (see nccl_comm.h for the rules).
#include <algorithm>
#include <thread>
#include <vector>

#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/op_args.hpp"
#include "commbench/sdk/plugin_error.hpp"
#include "nccl_comm.h"
#include "nccl_types.h"

namespace commbench::nccl_backend {
namespace {

ncclDataType_t dtype_of(const cb_backend& b, cb_dtype d) {
  const auto t = nccl_dtype(d, b.version);
  if (!t) sdk::fail(CB_ERR_UNIMPLEMENTED, "dtype " + std::string(sdk::dtype_name(d)) + " needs NCCL >= 2.24");
  return *t;
}

bool is_reduction_with_fp8(const cb_op_args& a) {
  return a.struct_size >= sdk::kOpArgsMinSize && sdk::is_reduction(a.op) &&
         (a.dtype == CB_DTYPE_F8E4M3 || a.dtype == CB_DTYPE_F8E5M2);
}

// ncclGroupStart whose ncclGroupEnd runs even when something between them throws; otherwise the
// thread would stay inside the group and every later NCCL call would be deferred forever.
class NcclGroup {
 public:
  NcclGroup(cb_comm& c) : c_(c) { check_nccl(c_.backend.api, c_.nccl, "ncclGroupStart", c_.backend.api.GroupStart()); }
  ncclResult_t end() {
    open_ = false;
    return c_.backend.api.GroupEnd();
  }
  ~NcclGroup() {
    if (open_) c_.backend.api.GroupEnd();
  }

 private:
  cb_comm& c_;
  bool open_ = true;
};

// Alltoall, gather and scatter as grouped send/recv, for NCCL without the native calls (< 2.28).
// `call` checks each NCCL result (a template, not std::function: nothing allocated per op).
template <class Call>
void exchange_by_send_recv(cb_comm& c, const cb_op_args& a, ncclDataType_t t, cudaStream_t s, const Call& call) {
  const NcclApi& api = c.backend.api;
  const int n = c.backend.host.world_size, me = c.backend.host.rank;
  const size_t bytes = a.count * sdk::dtype_size(a.dtype);
  const auto block = [&](const void* base, int r) { return static_cast<char*>(const_cast<void*>(base)) + static_cast<size_t>(r) * bytes; };
  NcclGroup group(c);
  for (int r = 0; r < n; ++r) {
    if (a.op == CB_OP_ALLTOALL) {
      call("ncclSend", api.Send(block(a.sendbuf, r), a.count, t, r, c.nccl, s));
      call("ncclRecv", api.Recv(block(a.recvbuf, r), a.count, t, r, c.nccl, s));
    } else if (a.op == CB_OP_GATHER) {
      if (r == 0) call("ncclSend", api.Send(a.sendbuf, a.count, t, a.root, c.nccl, s));
      if (me == a.root) call("ncclRecv", api.Recv(block(a.recvbuf, r), a.count, t, r, c.nccl, s));
    } else {
      if (me == a.root) call("ncclSend", api.Send(block(a.sendbuf, r), a.count, t, r, c.nccl, s));
      if (r == 0) call("ncclRecv", api.Recv(a.recvbuf, a.count, t, a.root, c.nccl, s));
    }
  }
  call("ncclGroupEnd", group.end());
}

// NCCLX's ncclAllToAllv with equal blocks: the NCCLX-only path, used when the library has it.
template <class Call>
void alltoall_by_alltoallv(cb_comm& c, const cb_op_args& a, ncclDataType_t t, cudaStream_t s, const Call& call) {
  const size_t n = static_cast<size_t>(c.backend.host.world_size);
  std::vector<size_t> counts(n, a.count), displs(n);
  for (size_t r = 0; r < n; ++r) displs[r] = r * a.count;
  call("ncclAllToAllv", c.backend.api.AllToAllv(a.sendbuf, counts.data(), displs.data(), a.recvbuf, counts.data(),
                                                displs.data(), t, c.nccl, s));
}

}  // namespace

// Checks the op and hands it to NCCL on its stream; returns that stream. What post and enqueue share.
cudaStream_t launch_nccl(cb_comm& c, const cb_op_args& given) {
  const cb_backend& b = c.backend;
  const NcclApi& api = b.api;
  if (given.struct_size >= sdk::kOpArgsMinSize && given.mem_type != CB_MEM_CUDA)
    sdk::fail(CB_ERR_UNIMPLEMENTED, "NCCL runs on cuda memory only");
  if (is_reduction_with_fp8(given) && b.compute_major < 9)
    sdk::fail(CB_ERR_UNIMPLEMENTED, "fp8 reductions need compute capability 9.0 or newer; this GPU has " +
                                        std::to_string(b.compute_major) + "." + std::to_string(b.compute_minor));
  // NCCL averages fp8 as a pre-multiplied sum (1/n rounded to fp8) from 2 ranks on; at one rank
  // ncclLaunchOneRank has no fp8 kernel and returns ncclInvalidArgument (2.28.9, seen on an H200 in
  // issue 26; its fp8 cases sit behind a __CUDA_ARCH__ test in host code). The capabilities cannot
  // say "every redop but this pair at one rank", so it is refused here, before NCCL marks the
  // communicator with an error.
  if (is_reduction_with_fp8(given) && given.redop == CB_REDOP_AVG && b.host.world_size == 1)
    sdk::fail(CB_ERR_UNIMPLEMENTED, "NCCL has no avg reduction for fp8 data at one rank (ncclInvalidArgument)");
  const cb_op_args a = sdk::checked_op_args(given, b.host.rank, b.host.world_size,
                                            nccl_capabilities(b.version, b.compute_major));
  if (c.aborted) sdk::fail(CB_ERR_REMOTE, "the communicator was aborted after an earlier error");
  if (a.op == CB_OP_ALLTOALL && a.sendbuf == a.recvbuf && a.count > 0)
    sdk::fail(CB_ERR_UNIMPLEMENTED, "in-place alltoall is undefined in NCCL (nccl-tests refuses it too)");
  cudaStream_t s = a.stream ? static_cast<cudaStream_t>(a.stream) : c.stream;
  auto red = [&] {
    const auto r = nccl_redop(a.redop);
    if (!r) sdk::fail(CB_ERR_UNIMPLEMENTED, "unknown reduce op");
    return *r;
  };
  // Outside a group, a non-blocking communicator's ncclInProgress is settled here, so the
  // completion event below is recorded after the launch, and the next call may use the comm.
  const auto call = [&](const char* what, ncclResult_t r) {
    check_nccl(api, c.nccl, what, r);
    if (r == ncclInProgress && c.group_depth == 0) settle(c, Clock::now() + b.options.timeout, what);
  };
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
      if (api.AllToAllv) alltoall_by_alltoallv(c, a, dtype_of(b, a.dtype), s, call);
      else if (api.AlltoAll) call("ncclAlltoAll", api.AlltoAll(a.sendbuf, a.recvbuf, a.count, dtype_of(b, a.dtype), c.nccl, s));
      else exchange_by_send_recv(c, a, dtype_of(b, a.dtype), s, call);
      break;
    case CB_OP_GATHER:
      if (api.Gather) call("ncclGather", api.Gather(a.sendbuf, a.recvbuf, a.count, dtype_of(b, a.dtype), a.root, c.nccl, s));
      else exchange_by_send_recv(c, a, dtype_of(b, a.dtype), s, call);
      break;
    case CB_OP_SCATTER:
      if (api.Scatter) call("ncclScatter", api.Scatter(a.sendbuf, a.recvbuf, a.count, dtype_of(b, a.dtype), a.root, c.nccl, s));
      else exchange_by_send_recv(c, a, dtype_of(b, a.dtype), s, call);
      break;
    default: sdk::fail(CB_ERR_UNIMPLEMENTED, "op " + std::to_string(a.op) + " is not known to this plugin");
  }
  // Teardown waits for every stream ops ran on, not just the communicator's own.
  if (s != c.last_stream) {
    c.last_stream = s;
    if (std::find(c.used_streams.begin(), c.used_streams.end(), s) == c.used_streams.end()) c.used_streams.push_back(s);
  }
  return s;
}

void enqueue_nccl(cb_comm& c, const cb_op_args& args) { launch_nccl(c, args); }

std::unique_ptr<cb_request> post_nccl(cb_comm& c, const cb_op_args& given) {
  const cudaStream_t s = launch_nccl(c, given);
  auto req = std::make_unique<cb_request>();
  req->comm = &c;
  req->stream = s;
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  check_cuda("cudaStreamIsCapturing", cudaStreamIsCapturing(s, &capturing));
  if (capturing != cudaStreamCaptureStatusNone) req->captured = true;  // the graph's launch completes it
  else if (c.group_depth > 0) c.in_group.push_back(req.get());  // its event comes at group_end
  else req->done = record_completion(c.events, s);
  return req;
}

void group_start_nccl(cb_comm& c) {
  if (c.aborted) sdk::fail(CB_ERR_REMOTE, "the communicator was aborted after an earlier error");
  check_nccl(c.backend.api, c.nccl, "ncclGroupStart", c.backend.api.GroupStart());
  ++c.group_depth;
}

void group_end_nccl(cb_comm& c) {
  if (c.group_depth == 0) sdk::fail(CB_ERR_INVALID_ARGUMENT, "group_end without group_start");
  const ncclResult_t r = c.backend.api.GroupEnd();
  if (--c.group_depth > 0) {
    check_nccl(c.backend.api, c.nccl, "ncclGroupEnd", r);
    return;
  }
  std::vector<cb_request*> posted;
  posted.swap(c.in_group);
  try {
    check_nccl(c.backend.api, c.nccl, "ncclGroupEnd", r);
    if (r == ncclInProgress) settle(c, Clock::now() + c.backend.options.timeout, "ncclGroupEnd");
    // Now the group's kernel is on the stream(s): one event per stream completes its requests.
    std::vector<std::pair<cudaStream_t, std::shared_ptr<PooledEvent>>> per_stream;
    for (cb_request* q : posted) {
      auto it = std::find_if(per_stream.begin(), per_stream.end(), [&](auto& e) { return e.first == q->stream; });
      if (it == per_stream.end()) {
        per_stream.emplace_back(q->stream, record_completion(c.events, q->stream));
        it = per_stream.end() - 1;
      }
      q->done = it->second;
    }
  } catch (...) {
    for (cb_request* q : posted) q->group_failed = true;
    throw;
  }
}

bool test_nccl(cb_request& r) {
  cb_comm& c = *r.comm;
  if (c.aborted) sdk::fail(CB_ERR_REMOTE, "the communicator was aborted after an earlier error");
  if (r.group_failed) sdk::fail(CB_ERR_INTERNAL, "the group this op was posted in failed to launch");
  if (r.captured)
    sdk::fail(CB_ERR_INVALID_ARGUMENT, "test/wait on an op posted during stream capture: it completes when the "
                                       "graph is launched (wait on the stream or an event after the launch)");
  if (!r.done) sdk::fail(CB_ERR_INVALID_ARGUMENT, "test/wait on an op whose group has not ended (call group_end first)");
  const cudaError_t e = cudaEventQuery(r.done->event);
  if (e != cudaSuccess && e != cudaErrorNotReady) check_cuda("cudaEventQuery", e);
  // Checked after completion too: an op that failed asynchronously (a peer gone, a NCCL
  // error) still lets the stream reach the event, and its buffers hold garbage.
  ncclResult_t state = ncclSuccess;
  check_nccl(c.backend.api, c.nccl, "ncclCommGetAsyncError", c.backend.api.CommGetAsyncError(c.nccl, &state));
  if (state != ncclSuccess && state != ncclInProgress) {
    // Read NCCL's detail first; then abort, so a dead peer does not leave kernels spinning.
    try {
      check_nccl(c.backend.api, c.nccl, "NCCL asynchronous error", state);
    } catch (...) {
      abort_once(c);
      throw;
    }
  }
  return e == cudaSuccess;
}

void wait_nccl(cb_request& r, int32_t timeout_ms) {
  const auto deadline = Clock::now() + (timeout_ms < 0 ? r.comm->backend.options.timeout
                                                       : std::chrono::milliseconds(timeout_ms));
  while (!test_nccl(r)) {
    if (Clock::now() >= deadline) {
      abort_once(*r.comm);
      sdk::fail(CB_ERR_TIMEOUT, "the NCCL op did not complete within the timeout (a peer did not take part?); "
                                "communicator aborted");
    }
    std::this_thread::yield();
  }
}

}  // namespace commbench::nccl_backend
