// What the collective algorithms need from the network, and nothing more: tagged, non-blocking
// point-to-point transfers between the ranks of one communicator. The UCX communicator
// implements it over ucp_tag_send_nbx/ucp_tag_recv_nbx; the unit tests implement it in memory,
// so every algorithm is tested without UCX and for any world size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "commbench/backend.h"

namespace commbench::ucx_backend {

// Steps are told apart modulo this (the bits the tags keep, tags.h).
inline constexpr uint32_t kChannelSteps = 4096;

class Channel {
 public:
  // A transfer posted since the last wait_all(): its position in post order.
  using Ticket = size_t;

  virtual ~Channel() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Start a transfer to/from `peer`. `step` tells apart the messages of one collective between
  // the same two ranks (any value; the channel also separates consecutive collectives). The
  // buffer stays the transfer's until wait() of its ticket or wait_all() returns: a send's may
  // be read and a receive's written at any moment before. A receive must name the exact size
  // sent. Two transfers in flight between the same pair must not share a step (mod kChannelSteps).
  virtual Ticket post_send(int peer, uint32_t step, const void* buf, size_t bytes) = 0;
  virtual Ticket post_recv(int peer, uint32_t step, void* buf, size_t bytes) = 0;

  // Completes one transfer (progressing all of them), so that its buffer is the caller's again
  // while the others stay in flight: what lets a pipeline reduce one segment while the next
  // arrives. Waiting twice for the same ticket is allowed. Fails like wait_all().
  virtual void wait(Ticket ticket) = 0;
  // Completes everything posted since the last wait_all(); tickets start again from 0. Throws
  // PluginError (errors.h) with CB_ERR_TIMEOUT or CB_ERR_REMOTE when a peer does not take part
  // or fails.
  virtual void wait_all() = 0;
};

// The arguments of one collective, with the ABI's count and in-place semantics (backend.h,
// cb_op_args). Buffers are host memory.
struct CollectiveArgs {
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  size_t count = 0;
  cb_dtype dtype = CB_DTYPE_F32;
  cb_redop redop = CB_REDOP_SUM;
  int root = 0;
};

}  // namespace commbench::ucx_backend
