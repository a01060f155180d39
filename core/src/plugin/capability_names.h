// Capability bit sets (cb_capabilities) <-> names, for listings, JSON and messages.
// Names come from the SDK name functions so experiment files, outputs and listings agree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "commbench/backend.h"

namespace commbench {

// Which field of cb_capabilities a mask belongs to (the bit index means a different enum in each).
enum class CapabilitySet { Ops, Dtypes, ReduceDtypes, Redops, MemTypes, Flags };

// "stream_ordered", "needs_progress", "in_place", "out_of_place", "groups", "async";
// "?" for a bit this build does not know.
std::string_view capability_flag_name(unsigned bit);

// Names of the bits set in `mask`, lowest bit first. A bit this build has no name for (a newer
// plugin's op or dtype) reads "bit<N>" so nothing is silently dropped and the JSON round-trips.
std::vector<std::string> capability_names(CapabilitySet set, uint64_t mask);

// Inverse of capability_names. Throws std::invalid_argument naming an unknown entry.
uint64_t capability_mask(CapabilitySet set, const std::vector<std::string>& names);

}  // namespace commbench
