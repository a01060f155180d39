// What the collective algorithms need from the network, and nothing more: tagged, non-blocking
// point-to-point transfers between the ranks of one communicator. The UCX communicator
// implements it over ucp_tag_send_nbx/ucp_tag_recv_nbx; the unit tests implement it in memory,
// so every algorithm is tested without UCX and for any world size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "commbench/backend.h"

namespace commbench::ucx_backend {

class Channel {
 public:
  virtual ~Channel() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Start a transfer to/from `peer`. `step` tells apart the messages of one collective between
  // the same two ranks (any value; the channel also separates consecutive collectives). The
  // buffer must stay valid until wait_all() returns. A receive must name the exact size sent.
  virtual void post_send(int peer, uint32_t step, const void* buf, size_t bytes) = 0;
  virtual void post_recv(int peer, uint32_t step, void* buf, size_t bytes) = 0;

  // Completes everything posted since the last wait_all(). Throws PluginError (errors.h)
  // with CB_ERR_TIMEOUT or CB_ERR_REMOTE when a peer does not take part or fails.
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
