// The choice by size follows MPICH and Open MPI: latency-optimal algorithms (log n rounds, whole
// buffers) for small messages; for mid sizes the bandwidth-optimal halving/doubling schemes (the
// ring's bytes in log n rounds: fewer handshakes, and fewer context switches when ranks share
// cores); the pipelined ring (n-1 rounds, each segment reduced while the next arrives) for large
// ones.
#include "select.h"

#include <array>
#include <string>
#include <utility>

#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend {
namespace {

constexpr std::array kAlltoall = {Algorithm::kPairwise};
constexpr std::array kTree = {Algorithm::kBinomial};
constexpr std::array kLinear = {Algorithm::kLinear};
constexpr std::array kBarrier = {Algorithm::kDissemination};

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// The forced algorithm of `op`, checked: the option named in the error is `<op>_algorithm`.
Algorithm checked(cb_op op, Algorithm forced) {
  const auto valid = valid_algorithms(op);
  for (Algorithm a : valid)
    if (a == forced) return forced;
  std::string list;
  for (Algorithm a : valid) list.append(list.empty() ? "" : ", ").append(algorithm_name(a));
  const std::string name(sdk::op_name(op));
  sdk::fail(CB_ERR_INVALID_ARGUMENT, "option " + name + "_algorithm = \"" +
                                         std::string(algorithm_name(forced)) + "\" is not valid: " +
                                         name + " algorithms are " + list);
}

// Forced wins; auto picks `small` below the op's small-message threshold, `mid` below
// ring_bytes, else the ring.
Algorithm by_size(cb_op op, Algorithm forced, Algorithm small, Algorithm mid, size_t bytes,
                  const AlgorithmChoice& c) {
  if (forced != Algorithm::kAuto) return checked(op, forced);  // auto needs no check: it runs per op
  if (bytes < small_message_bytes(op, c)) return small;
  return bytes < c.ring_bytes ? mid : Algorithm::kRing;
}

}  // namespace

std::string_view algorithm_name(Algorithm algorithm) { return algorithm_c_name(algorithm); }

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  for (const auto& [a, n] : kAlgorithmNames)
    if (n == name) return a;
  return std::nullopt;
}

std::span<const Algorithm> valid_algorithms(cb_op op) {
  switch (op) {
    case CB_OP_ALLREDUCE: return kAllreduceAlgorithms;
    case CB_OP_ALLGATHER: return kAllgatherAlgorithms;
    case CB_OP_REDUCESCATTER: return kReducescatterAlgorithms;
    case CB_OP_ALLTOALL: return kAlltoall;
    case CB_OP_BROADCAST:
    case CB_OP_REDUCE: return kTree;
    case CB_OP_GATHER:
    case CB_OP_SCATTER: return kLinear;
    case CB_OP_BARRIER: return kBarrier;
    default: return {};
  }
}

void validate_choice(const AlgorithmChoice& c) {
  checked(CB_OP_ALLREDUCE, c.allreduce);
  checked(CB_OP_ALLGATHER, c.allgather);
  checked(CB_OP_REDUCESCATTER, c.reducescatter);
}

size_t small_message_bytes(cb_op op, const AlgorithmChoice& c) {
  if (c.small_message_bytes) return *c.small_message_bytes;
  switch (op) {
    case CB_OP_ALLREDUCE: return kAllreduceSmallMessageBytes;
    case CB_OP_REDUCESCATTER: return kReducescatterSmallMessageBytes;
    default: return kReducescatterSmallMessageBytes;  // allgather: both tiers run recursive doubling
  }
}

Algorithm chosen_algorithm(cb_op op, size_t bytes, int world, const AlgorithmChoice& c) {
  switch (op) {
    case CB_OP_ALLREDUCE:
      return by_size(op, c.allreduce, Algorithm::kRecursiveDoubling, Algorithm::kRabenseifner, bytes, c);
    case CB_OP_ALLGATHER: {
      const Algorithm a =
          by_size(op, c.allgather, Algorithm::kRecursiveDoubling, Algorithm::kRecursiveDoubling, bytes, c);
      // Recursive doubling swaps with rank ^ 2^k: without a power-of-two world (no fold for
      // allgather here) the ring runs, forced or not.
      return a == Algorithm::kRecursiveDoubling && !is_power_of_two(world) ? Algorithm::kRing : a;
    }
    case CB_OP_REDUCESCATTER:
      return by_size(op, c.reducescatter, Algorithm::kPairwise, Algorithm::kRecursiveHalving, bytes, c);
    default: {
      const auto valid = valid_algorithms(op);
      return valid.empty() ? Algorithm::kAuto : valid.front();
    }
  }
}

}  // namespace commbench::ucx_backend
