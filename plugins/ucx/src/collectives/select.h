// Which algorithm runs a collective: the names, the experiment's forced choices, and the choice
// by message size under `auto`.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

#include "commbench/backend.h"

namespace commbench::ucx_backend {

enum class Algorithm {
  kAuto,               // by size: small_message_bytes and ring_bytes split the sizes in three
  kRing,               // allreduce (reduce-scatter + allgather), allgather, reducescatter; pipelined
  kRecursiveDoubling,  // allreduce; allgather on powers of two (other worlds run the ring)
  kRabenseifner,       // allreduce: reduce-scatter by recursive halving, allgather by doubling
  kRecursiveHalving,   // reducescatter
  kPairwise,           // reducescatter (direct exchange), alltoall
  kBinomial,           // broadcast, reduce
  kLinear,             // gather, scatter
  kDissemination,      // barrier
};

// Every algorithm's name, defined once: parsing, error lists and the option table's choices follow.
inline constexpr std::array<std::pair<Algorithm, const char*>, 9> kAlgorithmNames = {{
    {Algorithm::kAuto, "auto"},
    {Algorithm::kRing, "ring"},
    {Algorithm::kRecursiveDoubling, "recursive_doubling"},
    {Algorithm::kRabenseifner, "rabenseifner"},
    {Algorithm::kRecursiveHalving, "recursive_halving"},
    {Algorithm::kPairwise, "pairwise"},
    {Algorithm::kBinomial, "binomial"},
    {Algorithm::kLinear, "linear"},
    {Algorithm::kDissemination, "dissemination"},
}};

constexpr const char* algorithm_c_name(Algorithm algorithm) {
  for (const auto& [a, name] : kAlgorithmNames)
    if (a == algorithm) return name;
  return "?";
}

// The algorithms the three ops with a choice accept, kAuto first (valid_algorithms returns them).
inline constexpr std::array kAllreduceAlgorithms = {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling,
                                                    Algorithm::kRabenseifner};
inline constexpr std::array kAllgatherAlgorithms = {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling};
inline constexpr std::array kReducescatterAlgorithms = {Algorithm::kAuto, Algorithm::kRing, Algorithm::kPairwise,
                                                        Algorithm::kRecursiveHalving};

// Their names, NULL-terminated: the CB_OPTION_CHOICE list of the `<op>_algorithm` options.
template <size_t N>
constexpr std::array<const char*, N + 1> algorithm_choices(const std::array<Algorithm, N>& algorithms) {
  std::array<const char*, N + 1> names{};
  for (size_t i = 0; i < N; ++i) names[i] = algorithm_c_name(algorithms[i]);
  names[N] = nullptr;
  return names;
}

std::string_view algorithm_name(Algorithm algorithm);
std::optional<Algorithm> parse_algorithm(std::string_view name);

// What the experiment forced (kAuto: choose by size). Only these three ops have a choice.
struct AlgorithmChoice {
  Algorithm allreduce = Algorithm::kAuto;
  Algorithm allgather = Algorithm::kAuto;
  Algorithm reducescatter = Algorithm::kAuto;
  // Bytes per rank (count * dtype size): below the small-message threshold the latency-bound
  // algorithm (recursive doubling, pairwise), from ring_bytes on the ring, in between the
  // mid-size one (rabenseifner, recursive_halving, recursive doubling for allgather). The option
  // sets one threshold for every op; unset, each op has its own (small_message_bytes()).
  std::optional<size_t> small_message_bytes;
  size_t ring_bytes = 4 * 1024 * 1024;
  // The ring's pipeline segment (option ring_segment; 0: whole blocks, one message per block).
  size_t segment_bytes = 0;
};

// auto's small-message thresholds where the option is unset, measured on one node with forced
// algorithms alternating in one job (docs/performance-ucx-mpi.md, "A threshold per op" and "In
// place from 64 KiB"). Allreduce: recursive doubling was slower than Rabenseifner in place at
// 64 KiB (1.02-1.07x its time at 2 ranks, 1.15-1.17x at 4, 3,000 ops a case) and at 128 KiB; out
// of place it stays faster, but there the peer reads an input no op rewrites, from its own cache,
// and Rabenseifner is still above Open MPI. Reducescatter: pairwise did not beat recursive halving
// at 64 KiB.
inline constexpr size_t kAllreduceSmallMessageBytes = 64 * 1024;
inline constexpr size_t kReducescatterSmallMessageBytes = 64 * 1024;

// The small-message threshold auto applies to `op`: the option's, else the op's own.
size_t small_message_bytes(cb_op op, const AlgorithmChoice& choice);

// The algorithms `op` accepts, kAuto first where it has a choice; empty for an op that is not
// a collective of this plugin.
std::span<const Algorithm> valid_algorithms(cb_op op);

// Throws PluginError(CB_ERR_INVALID_ARGUMENT), naming the option and listing the valid
// algorithms, when a forced algorithm does not exist for its op.
void validate_choice(const AlgorithmChoice& choice);

// The algorithm that runs `op` for `bytes` per rank (count * dtype size) on `world` ranks: never
// kAuto for a collective (kAuto for any other op). Throws like validate_choice for a forced
// algorithm foreign to `op`. algorithm_name() of it is what the plugin reports as run.
// Only what every rank of the op has in common decides (op, size, world, options): placement
// does not, since each rank may choose it for itself (backend.h, as in NCCL), and ranks running
// different algorithms would exchange messages that do not match.
Algorithm chosen_algorithm(cb_op op, size_t bytes, int world, const AlgorithmChoice& choice);

}  // namespace commbench::ucx_backend
