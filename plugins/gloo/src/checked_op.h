// One op's arguments after every check post() makes before touching gloo. All checks depend
// only on values every rank shares (op, count, dtype, redop, root, options), except the buffer
// checks, so an unsupported case fails the same way on every rank and nobody is left waiting.
#pragma once

#include <cstddef>
#include <cstdint>

#include "commbench/backend.h"
#include "options.h"

namespace commbench::gloo_backend {

struct CheckedOp {
  cb_op op = CB_OP_BARRIER;
  const void* sendbuf = nullptr;
  void* recvbuf = nullptr;
  size_t count = 0;
  cb_dtype dtype = CB_DTYPE_UINT8;
  cb_redop redop = CB_REDOP_SUM;
  int root = 0;
  int peer = 0;
  uint32_t tag = 0;
  size_t element_size = 1;
  size_t bytes = 0;  // count * element_size: one rank's block (see cb_op_args for layouts)
};

// Throws PluginError: CB_ERR_UNIMPLEMENTED for cases gloo does not support,
// CB_ERR_INVALID_ARGUMENT for malformed arguments.
CheckedOp check_op(const cb_op_args& args, int rank, int world_size, AllreduceAlgorithm algorithm);

}  // namespace commbench::gloo_backend
