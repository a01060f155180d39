// The all-pairs point-to-point sweep (seed 003): for every directed pair (src, dst), src != dst,
// and every size, one message from src to dst while the other ranks wait. The whole
// (pair x size) list is shuffled with the experiment's seed, so order effects (warm caches,
// thermal drift, a neighbour's traffic) spread over all configurations and a rerun repeats the
// same order. Buffers are allocated once, at the largest size, and filled with pseudo-random
// non-zero bytes; a transfer that delivers nothing leaves zeros the check counts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/case_runner.h"

namespace commbench {

// One timed transfer, as seed 003's execution log has it. start_ns is when the timed interval
// began on rank `timer_rank`'s timer (HostTimer::now_ns, CLOCK_MONOTONIC ns): the sender's post,
// or the receiver's when the pair has two clocks and the receiver's own time was the sample;
// end_ns = start_ns + duration_ns. The execution log puts them on rank 0's timeline with that
// rank's clock estimate (measure/clock_sync.h). duration_ns is the sample (transfer_duration_ns).
struct TransferLogEntry {
  int config_id = 0;
  int src = 0;
  int dst = 0;
  uint64_t bytes = 0;
  int repetition = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t duration_ns = 0;
  int timer_rank = 0;
};

void to_json(nlohmann::json& j, const TransferLogEntry& e);
void from_json(const nlohmann::json& j, TransferLogEntry& e);

struct AllPairsConfig {
  int id = 0;  // in (src, dst, size) order, before shuffling
  int src = 0;
  int dst = 0;
  size_t size_index = 0;
};

// A sender's or receiver's times for one transfer: its timer around its own op, and the host
// clock when the sender posted or when the receiver saw the message arrive.
struct PairTimes {
  int64_t start_ns = 0, end_ns = 0, monotonic_ns = 0;
};

// The sample of one transfer. When both ranks read one CLOCK_MONOTONIC: from the sender's post to
// the receiver seeing the message (or to the sender's completion, if later), the record's
// rank_aggregation kSenderToArrival. Across clocks, which cannot be subtracted to the
// microsecond, the longer of the two ranks' own times ("slowest_per_iteration"); the receiver's
// starts before the sender posts (transfer() waits for it), so it is never shorter than the transfer.
int64_t transfer_duration_ns(bool one_clock, const PairTimes& sender, const PairTimes& receiver);
inline constexpr std::string_view kSenderToArrival = "sender_to_arrival";

// Every directed pair x size, numbered in (src, dst, size) order, then shuffled with `seed`
// (Fisher-Yates over SplitMix64: the same order with every compiler and standard library).
std::vector<AllPairsConfig> all_pairs_configs(int world, size_t sizes, uint64_t seed);

// The byte at `index` of rank `src`'s payload: pseudo-random, never zero.
uint8_t all_pairs_payload_byte(uint64_t seed, int src, uint64_t index);

struct AllPairsSink {
  std::function<void(CaseRecord)> record;                               // rank 0
  std::function<void(const std::vector<TransferLogEntry>&)> transfers;  // rank 0, per repetition
  std::function<void(const std::string&)> progress;                     // every rank
};

// Runs the sweep over `cases` (the all_pairs cases of the execution, one per size). Collective
// over the ranks of the execution. Records come out on rank 0, one per (src, dst, size), in
// (size, src, dst) order, after the last repetition.
void run_all_pairs(CaseEnvironment& env, const std::vector<CaseSpec>& cases, const AllPairsSink& sink);

}  // namespace commbench
