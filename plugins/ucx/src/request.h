// A posted op. Collectives finish inside post() (CollectiveArgs over the channel) and yield a
// request that is already complete; send/recv carry their transfer, still in flight.
#pragma once

#include <memory>

#include "transfers.h"

struct cb_comm;

struct cb_request {
  cb_comm* comm = nullptr;
  commbench::ucx_backend::Transfer transfer;  // send/recv; a collective's is done at post

  cb_request() = default;
  cb_request(const cb_request&) = delete;
  cb_request& operator=(const cb_request&) = delete;
  ~cb_request();  // cancels a receive still posted: its buffer is about to be freed

  // Recycled through a per-thread free list: a request is allocated and freed for every
  // message, on the timed path of sub-microsecond ping-pongs.
  static void* operator new(size_t size);
  static void operator delete(void* p) noexcept;
};

namespace commbench::ucx_backend {

std::unique_ptr<cb_request> post_op(cb_comm& comm, const cb_op_args& args);
// One progress round, then whether the request is complete (throws if it failed).
bool test_request(cb_request& request);
void wait_request(cb_request& request, int32_t timeout_ms);
// post + wait without a request object (the ABI's `complete`).
void complete_op(cb_comm& comm, const cb_op_args& args, int32_t timeout_ms);

}  // namespace commbench::ucx_backend
