// Argument checks and the dispatch of run_collective() to the algorithm select.cpp chose.
#include "collectives.h"

#include <string>

#include "binomial.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/op_args.hpp"
#include "commbench/sdk/plugin_error.hpp"
#include "dissemination.h"
#include "halving_doubling.h"
#include "linear.h"
#include "pairwise.h"
#include "recursive_doubling.h"
#include "ring.h"

namespace commbench::ucx_backend {
namespace {

void check_args(Channel& ch, cb_op op, const CollectiveArgs& a) {
  const std::string what(sdk::op_name(op));
  if (op == CB_OP_BARRIER) return;
  if (sdk::dtype_size(a.dtype) == 0)
    sdk::fail(CB_ERR_INVALID_ARGUMENT, what + ": unknown dtype " + std::to_string(a.dtype));
  if (sdk::is_reduction(op) && (static_cast<int>(a.redop) < 0 || static_cast<int>(a.redop) >= CB_REDOP_COUNT_V1))
    sdk::fail(CB_ERR_INVALID_ARGUMENT, what + ": unknown reduce op " + std::to_string(a.redop));
  if (sdk::is_rooted(op) && (a.root < 0 || a.root >= ch.size()))
    sdk::fail(CB_ERR_INVALID_ARGUMENT, what + ": root " + std::to_string(a.root) + " is not a rank of " +
                                           std::to_string(ch.size()));
}

}  // namespace

void run_collective(Channel& ch, cb_op op, const CollectiveArgs& a, const AlgorithmChoice& choice,
                    Scratch& s) {
  if (valid_algorithms(op).empty())
    sdk::fail(CB_ERR_UNIMPLEMENTED, "op " + std::string(sdk::op_name(op)) + " (" + std::to_string(op) +
                                        ") is not a collective of the ucx plugin");
  check_args(ch, op, a);
  const Algorithm algorithm = chosen_algorithm(op, a.count * sdk::dtype_size(a.dtype), ch.size(), choice);
  // Nothing to move (NCCL does the same): no messages, so no rank waits for another.
  if (op != CB_OP_BARRIER && a.count == 0) return;
  switch (op) {
    case CB_OP_ALLREDUCE:
      if (algorithm == Algorithm::kRing) ring_allreduce(ch, a, s, choice.segment_bytes);
      else if (algorithm == Algorithm::kRabenseifner) rabenseifner_allreduce(ch, a, s);
      else recursive_doubling_allreduce(ch, a, s);
      return;
    case CB_OP_ALLGATHER:
      if (algorithm == Algorithm::kRing) ring_allgather(ch, a, s, choice.segment_bytes);
      else recursive_doubling_allgather(ch, a);
      return;
    case CB_OP_REDUCESCATTER:
      if (algorithm == Algorithm::kRing) ring_reducescatter(ch, a, s, choice.segment_bytes);
      else if (algorithm == Algorithm::kRecursiveHalving) recursive_halving_reducescatter(ch, a, s);
      else pairwise_reducescatter(ch, a, s);
      return;
    case CB_OP_ALLTOALL: pairwise_alltoall(ch, a, s); return;
    case CB_OP_BROADCAST: binomial_broadcast(ch, a); return;
    case CB_OP_REDUCE: binomial_reduce(ch, a, s); return;
    case CB_OP_GATHER: linear_gather(ch, a); return;
    case CB_OP_SCATTER: linear_scatter(ch, a); return;
    case CB_OP_BARRIER: dissemination_barrier(ch); return;
    default: return;  // unreachable: valid_algorithms() knows exactly these ops
  }
}

}  // namespace commbench::ucx_backend
