// A communicator of the nccl/ncclx plugins, its requests and its buffers.
//
// Ops are enqueued on the stream the core passes (cb_op_args.stream) or the communicator's own.
// A request completes when a CUDA event recorded after its op has passed. Three NCCL rules shape
// this file (NCCL 2.28, nccl.h):
//  - Non-blocking communicators (option blocking = off: init can then be abandoned at a deadline) may
//    return ncclInProgress from init, any op and ncclGroupEnd; the op is launched later, and the
//    communicator must not be used until ncclCommGetAsyncError leaves ncclInProgress. Every such
//    call is settled before the completion event is recorded (settle()).
//  - Inside ncclGroupStart/End nothing reaches the stream until ncclGroupEnd, so an event recorded
//    at post would pass before the op exists: requests posted in a group get their event at
//    group_end.
//  - After ncclCommAbort the ncclComm_t is freed: nothing may touch it again (`aborted`).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "nccl_backend.h"
#include "nccl_events.h"

struct cb_comm {
  cb_backend& backend;
  ncclComm_t nccl = nullptr;
  cudaStream_t stream = nullptr;
  void* barrier_buffer = nullptr;  // one float on the device: barrier = a 1-element allreduce
  bool aborted = false;            // ncclCommAbort ran: `nccl` is gone
  bool destroyed = false;          // ncclCommDestroy ran
  int group_depth = 0;             // open group_start calls
  std::vector<cb_request*> in_group;  // posted in the open group, waiting for its event
  std::shared_ptr<commbench::nccl_backend::EventPool> events;
  std::map<void*, cb_mem> allocations;  // what mem_alloc handed out, to free it the same way
  std::map<void*, void*> registered;     // registration = on: buffer -> its ncclCommRegister handle
  // Every stream an op was launched on (the core passes its own): teardown waits for all of them.
  std::vector<cudaStream_t> used_streams;
  cudaStream_t last_stream = nullptr;  // the common case, one stream, without a search per op

  explicit cb_comm(cb_backend& b);
  ~cb_comm();
};

struct cb_request {
  cb_comm* comm = nullptr;
  cudaStream_t stream = nullptr;
  std::shared_ptr<commbench::nccl_backend::PooledEvent> done;  // null until the op is launched
  bool group_failed = false;  // the group it was posted in did not launch
  // Posted while its stream was being captured into a CUDA graph (CB_CAP_GRAPH_CAPTURE): no
  // completion event (a pooled event recorded inside the graph would be re-recorded by every
  // launch, long after the pool lent it to another request); never waited for.
  bool captured = false;
  ~cb_request();
};

namespace commbench::nccl_backend {

using Clock = std::chrono::steady_clock;

std::unique_ptr<cb_comm> create_nccl_comm(cb_backend& backend, int32_t timeout_ms);
void destroy_nccl_comm(std::unique_ptr<cb_comm> comm);
void abort_nccl_comm(std::unique_ptr<cb_comm> comm);

// Waits until a non-blocking communicator's last call has left ncclInProgress; fails with its
// error, or aborts the communicator at `deadline`.
void settle(cb_comm& comm, Clock::time_point deadline, const char* what);
// ncclCommAbort once; the handle is never used again.
void abort_once(cb_comm& comm);

std::unique_ptr<cb_request> post_nccl(cb_comm& comm, const cb_op_args& args);
// ABI 1.3: the op on its stream, no request (no completion event, no allocation).
void enqueue_nccl(cb_comm& comm, const cb_op_args& args);
bool test_nccl(cb_request& request);
void wait_nccl(cb_request& request, int32_t timeout_ms);
void group_start_nccl(cb_comm& comm);
void group_end_nccl(cb_comm& comm);

void* alloc_nccl(cb_comm& comm, cb_mem type, size_t bytes);
void free_nccl(cb_comm& comm, void* ptr);

}  // namespace commbench::nccl_backend
