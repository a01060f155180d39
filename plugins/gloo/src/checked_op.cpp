#include "checked_op.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "commbench/sdk/dtypes.hpp"
#include "errors.h"

namespace commbench::gloo_backend {
namespace {

std::string name_of(cb_op op) { return std::string(sdk::op_name(op)); }

// Enum values come from another binary: compare as int, whatever the enum's underlying type.
bool in_range(int value, int count) { return value >= 0 && value < count; }

bool is_rooted(cb_op op) {
  return op == CB_OP_BROADCAST || op == CB_OP_REDUCE || op == CB_OP_GATHER || op == CB_OP_SCATTER;
}

// Copies the caller's struct, reading only the fields its struct_size covers (ABI rule).
cb_op_args read_args(const cb_op_args& given) {
  if (given.struct_size < CB_STRUCT_SIZE(cb_op_args, op))
    fail(CB_ERR_INVALID_ARGUMENT, "cb_op_args.struct_size is " + std::to_string(given.struct_size) +
                                      "; fill it with CB_STRUCT_SIZE(cb_op_args, <last field>)");
  cb_op_args args{};
  std::memcpy(&args, &given, std::min(given.struct_size, sizeof(args)));
  return args;
}

void check_reduction(const cb_op_args& args) {
  if (args.redop == CB_REDOP_AVG)
    fail(CB_ERR_UNIMPLEMENTED,
         "gloo has no average reduction; measure redop \"sum\" instead (avg = sum / world size)");
  if (!in_range(args.redop, CB_REDOP_COUNT_V1))
    fail(CB_ERR_UNIMPLEMENTED, "reduction op " + std::to_string(args.redop) + " is unknown to this plugin");
  if (args.dtype == CB_DTYPE_F8E4M3 || args.dtype == CB_DTYPE_F8E5M2)
    fail(CB_ERR_UNIMPLEMENTED, "gloo has no fp8 arithmetic, so " + name_of(args.op) + " of " +
                                   std::string(sdk::dtype_name(args.dtype)) +
                                   " is unsupported (fp8 data movement works)");
}

// Old-style gloo algorithms keep counts and byte sizes in `int`.
void check_fits_int(size_t bytes, const std::string& what) {
  if (bytes > static_cast<size_t>(INT_MAX))
    fail(CB_ERR_UNIMPLEMENTED, what + " handles at most 2^31-1 bytes; this case needs " +
                                   std::to_string(bytes));
}

void require(const void* pointer, const char* name, cb_op op) {
  if (pointer == nullptr)
    fail(CB_ERR_INVALID_ARGUMENT, name_of(op) + ": " + name + " is NULL but count > 0");
}

void check_buffers(const CheckedOp& op, int rank) {
  if (op.count == 0) return;
  const bool is_root = rank == op.root;
  switch (op.op) {
    case CB_OP_ALLREDUCE: case CB_OP_ALLGATHER: case CB_OP_REDUCESCATTER: case CB_OP_ALLTOALL:
      require(op.sendbuf, "sendbuf", op.op);
      require(op.recvbuf, "recvbuf", op.op);
      break;
    case CB_OP_BROADCAST: case CB_OP_SCATTER:
      if (is_root) require(op.sendbuf, "sendbuf (root)", op.op);
      require(op.recvbuf, "recvbuf", op.op);
      break;
    case CB_OP_REDUCE: case CB_OP_GATHER:
      require(op.sendbuf, "sendbuf", op.op);
      if (is_root) require(op.recvbuf, "recvbuf (root)", op.op);
      break;
    case CB_OP_SEND: require(op.sendbuf, "sendbuf", op.op); break;
    case CB_OP_RECV: require(op.recvbuf, "recvbuf", op.op); break;
    default: break;
  }
}

}  // namespace

CheckedOp check_op(const cb_op_args& given, int rank, int world_size, AllreduceAlgorithm algorithm) {
  const cb_op_args args = read_args(given);
  if (!in_range(args.op, CB_OP_COUNT_V1))
    fail(CB_ERR_UNIMPLEMENTED, "op " + std::to_string(args.op) + " is unknown to this plugin (ABI 1.0)");
  if (args.mem_type != CB_MEM_HOST)
    fail(CB_ERR_UNIMPLEMENTED, "the gloo plugin works on host memory only; memory type " +
                                   std::string(sdk::mem_name(args.mem_type)) + " is unsupported");
  CheckedOp op;
  op.op = args.op;
  if (op.op == CB_OP_BARRIER) return op;

  if (!in_range(args.dtype, CB_DTYPE_COUNT_V1))
    fail(CB_ERR_UNIMPLEMENTED, "dtype " + std::to_string(args.dtype) + " is unknown to this plugin");
  if (sdk::is_reduction(args.op)) check_reduction(args);
  if (is_rooted(args.op) && (args.root < 0 || args.root >= world_size))
    fail(CB_ERR_INVALID_ARGUMENT, name_of(args.op) + ": root " + std::to_string(args.root) +
                                      " is outside 0.." + std::to_string(world_size - 1));
  if ((args.op == CB_OP_SEND || args.op == CB_OP_RECV) &&
      (args.peer < 0 || args.peer >= world_size || args.peer == rank))
    fail(CB_ERR_INVALID_ARGUMENT, name_of(args.op) + ": peer " + std::to_string(args.peer) +
                                      " must be another rank in 0.." + std::to_string(world_size - 1));

  op.sendbuf = args.sendbuf;
  op.recvbuf = args.recvbuf;
  op.count = args.count;
  op.dtype = args.dtype;
  op.redop = args.redop;
  op.root = args.root;
  op.peer = args.peer;
  op.tag = args.tag;
  op.element_size = sdk::dtype_size(args.dtype);
  // The largest buffer any op touches is count * element_size * world_size bytes.
  if (op.count > SIZE_MAX / op.element_size / static_cast<size_t>(world_size))
    fail(CB_ERR_INVALID_ARGUMENT, name_of(op.op) + ": count " + std::to_string(op.count) +
                                      " overflows the address space");
  op.bytes = op.count * op.element_size;

  if (op.op == CB_OP_ALLREDUCE && is_in_place_only(algorithm)) {
    const std::string name = "allreduce_algorithm = \"" + std::string(algorithm_name(algorithm)) + "\"";
    if (op.sendbuf != op.recvbuf)
      fail(CB_ERR_UNIMPLEMENTED, name + " is in-place only; use placement = [\"in_place\"]");
    check_fits_int(op.bytes, "gloo's " + std::string(algorithm_name(algorithm)) + " allreduce");
  }
  if (op.op == CB_OP_REDUCESCATTER)
    check_fits_int(op.bytes * static_cast<size_t>(world_size), "gloo's halving-doubling reduce-scatter");
  check_buffers(op, rank);
  return op;
}

}  // namespace commbench::gloo_backend
