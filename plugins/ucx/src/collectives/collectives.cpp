// Algorithm names, the choice by size, and the dispatch of run_collective().
#include "collectives.h"

#include <array>
#include <string>

#include "algorithms.h"
#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend {
namespace {

using sdk::fail;

constexpr std::array<std::pair<Algorithm, std::string_view>, 7> kNames = {{
    {Algorithm::kAuto, "auto"},
    {Algorithm::kRing, "ring"},
    {Algorithm::kRecursiveDoubling, "recursive_doubling"},
    {Algorithm::kPairwise, "pairwise"},
    {Algorithm::kBinomial, "binomial"},
    {Algorithm::kLinear, "linear"},
    {Algorithm::kDissemination, "dissemination"},
}};

bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

void check_forced(std::string_view key, Algorithm forced, Algorithm small, std::string_view valid) {
  if (forced == Algorithm::kAuto || forced == Algorithm::kRing || forced == small) return;
  fail(CB_ERR_INVALID_ARGUMENT, "option " + std::string(key) + " = \"" +
                                    std::string(algorithm_name(forced)) +
                                    "\" is not an algorithm of that op; expected one of " +
                                    std::string(valid));
}

Algorithm by_size(Algorithm forced, Algorithm small, size_t bytes, const AlgorithmChoice& c) {
  if (forced != Algorithm::kAuto) return forced;
  return bytes < c.small_message_bytes ? small : Algorithm::kRing;
}

}  // namespace

std::string_view algorithm_name(Algorithm algorithm) {
  for (const auto& [a, name] : kNames)
    if (a == algorithm) return name;
  return "?";
}

std::optional<Algorithm> parse_algorithm(std::string_view name) {
  for (const auto& [a, n] : kNames)
    if (n == name) return a;
  return std::nullopt;
}

void validate_choice(const AlgorithmChoice& c) {
  check_forced("allreduce_algorithm", c.allreduce, Algorithm::kRecursiveDoubling,
               "auto, ring, recursive_doubling");
  check_forced("allgather_algorithm", c.allgather, Algorithm::kRecursiveDoubling,
               "auto, ring, recursive_doubling");
  check_forced("reducescatter_algorithm", c.reducescatter, Algorithm::kPairwise,
               "auto, ring, pairwise");
}

Algorithm chosen_algorithm(cb_op op, size_t bytes, int world, const AlgorithmChoice& c) {
  switch (op) {
    case CB_OP_ALLREDUCE: return by_size(c.allreduce, Algorithm::kRecursiveDoubling, bytes, c);
    case CB_OP_ALLGATHER: {
      const Algorithm a = by_size(c.allgather, Algorithm::kRecursiveDoubling, bytes, c);
      // Recursive doubling pairs ranks by bit: it needs a power-of-two world.
      return a == Algorithm::kRecursiveDoubling && !is_power_of_two(world) ? Algorithm::kRing : a;
    }
    case CB_OP_REDUCESCATTER: return by_size(c.reducescatter, Algorithm::kPairwise, bytes, c);
    case CB_OP_ALLTOALL: return Algorithm::kPairwise;
    case CB_OP_BROADCAST:
    case CB_OP_REDUCE: return Algorithm::kBinomial;
    case CB_OP_GATHER:
    case CB_OP_SCATTER: return Algorithm::kLinear;
    case CB_OP_BARRIER: return Algorithm::kDissemination;
    default: return Algorithm::kAuto;
  }
}

void run_collective(Channel& ch, cb_op op, const CollectiveArgs& a, const AlgorithmChoice& choice,
                    Scratch& s) {
  using namespace algorithms;
  const size_t bytes = a.count * sdk::dtype_size(a.dtype);
  const Algorithm algorithm = chosen_algorithm(op, bytes, ch.size(), choice);
  switch (op) {
    case CB_OP_ALLREDUCE:
      if (algorithm == Algorithm::kRing) ring_allreduce(ch, a, s);
      else recursive_doubling_allreduce(ch, a, s);
      return;
    case CB_OP_ALLGATHER:
      if (algorithm == Algorithm::kRing) ring_allgather(ch, a);
      else recursive_doubling_allgather(ch, a);
      return;
    case CB_OP_REDUCESCATTER:
      if (algorithm == Algorithm::kRing) ring_reducescatter(ch, a, s);
      else pairwise_reducescatter(ch, a, s);
      return;
    case CB_OP_ALLTOALL: pairwise_alltoall(ch, a, s); return;
    case CB_OP_BROADCAST: binomial_broadcast(ch, a); return;
    case CB_OP_REDUCE: binomial_reduce(ch, a, s); return;
    case CB_OP_GATHER: linear_gather(ch, a); return;
    case CB_OP_SCATTER: linear_scatter(ch, a); return;
    case CB_OP_BARRIER: dissemination_barrier(ch); return;
    default:
      fail(CB_ERR_UNIMPLEMENTED, "op " + std::to_string(op) + " is not a collective of this plugin");
  }
}

}  // namespace commbench::ucx_backend
