#include "checked_op.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <string>

#include "capabilities.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/op_args.hpp"
#include "errors.h"

namespace commbench::gloo_backend {
namespace {

std::string name_of(cb_op op) { return std::string(sdk::op_name(op)); }

// The cases gloo knows but cannot do, refused with a hint before the SDK's generic refusal.
void check_reduction(const cb_op_args& args) {
  if (args.redop == CB_REDOP_AVG)
    fail(CB_ERR_UNIMPLEMENTED,
         "gloo has no average reduction; measure redop \"sum\" instead (avg = sum / world size)");
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

}  // namespace

CheckedOp check_op(const cb_op_args& given, int rank, int world_size, AllreduceAlgorithm algorithm) {
  const cb_op_args args = sdk::read_op_args(given);
  if (args.mem_type != CB_MEM_HOST && static_cast<unsigned>(args.mem_type) < CB_MEM_COUNT_V1)
    fail(CB_ERR_UNIMPLEMENTED, "the gloo plugin works on host memory only; memory type " +
                                   std::string(sdk::mem_name(args.mem_type)) + " is unsupported");
  if (sdk::is_reduction(args.op)) check_reduction(args);
  sdk::require_advertised(args, static_capabilities(), rank);
  sdk::require_valid(args, rank, world_size);
  CheckedOp op;
  op.op = args.op;
  if (op.op == CB_OP_BARRIER) return op;
  // Gloo has no pair to the rank itself: a valid request it does not implement (docs/plugin-abi.md
  // §4, "Self send/recv"), so the core records the case as unsupported.
  if (sdk::is_point_to_point(args.op) && args.peer == rank)
    fail(CB_ERR_UNIMPLEMENTED, name_of(args.op) + ": peer " + std::to_string(args.peer) +
                                   " is this rank; the gloo plugin does not send to itself");

  op.sendbuf = args.sendbuf;
  op.recvbuf = args.recvbuf;
  op.count = args.count;
  op.dtype = args.dtype;
  op.redop = args.redop;
  op.root = args.root;
  op.peer = args.peer;
  op.tag = args.tag;
  op.element_size = sdk::dtype_size(args.dtype);
  op.bytes = op.count * op.element_size;

  if (op.op == CB_OP_ALLREDUCE && is_in_place_only(algorithm)) {
    const std::string name = "allreduce_algorithm = \"" + std::string(algorithm_name(algorithm)) + "\"";
    if (op.sendbuf != op.recvbuf)
      fail(CB_ERR_UNIMPLEMENTED, name + " is in-place only; use placement = [\"in_place\"]");
    check_fits_int(op.bytes, "gloo's " + std::string(algorithm_name(algorithm)) + " allreduce");
  }
  if (op.op == CB_OP_REDUCESCATTER)
    check_fits_int(op.bytes * static_cast<size_t>(world_size), "gloo's halving-doubling reduce-scatter");
  return op;
}

}  // namespace commbench::gloo_backend
