// A communicator of the nccl/ncclx plugins, its requests (a CUDA event recorded after the op on
// the op's stream) and its buffers. Ops are enqueued on the stream the core passes (cb_op_args
// .stream) or the communicator's own; completion is the event, and a wait that passes its
// deadline, or an asynchronous NCCL error, aborts the communicator so no rank hangs.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <map>
#include <memory>

#include "nccl_backend.h"

struct cb_comm {
  cb_backend& backend;
  ncclComm_t nccl = nullptr;
  cudaStream_t stream = nullptr;
  void* barrier_buffer = nullptr;  // one float on the device: barrier = a 1-element allreduce
  bool aborted = false;
  std::map<void*, cb_mem> allocations;  // what mem_alloc handed out, to free it the same way

  explicit cb_comm(cb_backend& b) : backend(b) {}
  ~cb_comm();
};

struct cb_request {
  cb_comm* comm = nullptr;
  cudaEvent_t done = nullptr;
  ~cb_request();
};

namespace commbench::nccl_backend {

std::unique_ptr<cb_comm> create_nccl_comm(cb_backend& backend, int32_t timeout_ms);
void destroy_nccl_comm(std::unique_ptr<cb_comm> comm);
void abort_nccl_comm(std::unique_ptr<cb_comm> comm);

std::unique_ptr<cb_request> post_nccl(cb_comm& comm, const cb_op_args& args);
bool test_nccl(cb_request& request);
void wait_nccl(cb_request& request, int32_t timeout_ms);

void* alloc_nccl(cb_comm& comm, cb_mem type, size_t bytes);
void free_nccl(cb_comm& comm, void* ptr);

}  // namespace commbench::nccl_backend
