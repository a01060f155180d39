#include "post.h"

#include "checked_op.h"
#include "collectives.h"
#include "communicator.h"
#include "p2p.h"

namespace commbench::gloo_backend {

std::unique_ptr<cb_request> post_op(cb_comm& comm, const cb_op_args& args) {
  const CheckedOp op =
      check_op(args, comm.rank, comm.size, comm.backend->options.allreduce_algorithm);
  if (op.op == CB_OP_SEND || op.op == CB_OP_RECV) return post_send_or_recv(comm, op);
  run_collective(comm, op);
  return std::make_unique<cb_request>();  // already complete
}

void complete_op(cb_comm& comm, const cb_op_args& args, int32_t timeout_ms) {
  const CheckedOp op =
      check_op(args, comm.rank, comm.size, comm.backend->options.allreduce_algorithm);
  if (op.op == CB_OP_SEND || op.op == CB_OP_RECV) return wait_request(*post_send_or_recv(comm, op), timeout_ms);
  run_collective(comm, op);
}

}  // namespace commbench::gloo_backend
