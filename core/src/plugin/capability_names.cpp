#include "plugin/capability_names.h"

#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"

namespace commbench {
namespace {

constexpr std::string_view kUnknown = "?";

std::string_view bit_name(CapabilitySet set, unsigned bit) {
  // Only values this build defines are cast to the enums: out-of-range enum values are not valid.
  switch (set) {
    case CapabilitySet::Ops:
      return bit < CB_OP_COUNT_V1 ? sdk::op_name(static_cast<cb_op>(bit)) : kUnknown;
    case CapabilitySet::Dtypes:
    case CapabilitySet::ReduceDtypes:
      return bit < CB_DTYPE_COUNT_V1 ? sdk::dtype_name(static_cast<cb_dtype>(bit)) : kUnknown;
    case CapabilitySet::Redops:
      return bit < CB_REDOP_COUNT_V1 ? sdk::redop_name(static_cast<cb_redop>(bit)) : kUnknown;
    case CapabilitySet::MemTypes:
      return bit < CB_MEM_COUNT_V1 ? sdk::mem_name(static_cast<cb_mem>(bit)) : kUnknown;
    case CapabilitySet::Flags: return capability_flag_name(bit);
  }
  return kUnknown;
}

// "bit<N>" -> N, for bits a newer plugin set that this build cannot name.
bool parse_raw_bit(std::string_view name, unsigned* bit) {
  constexpr std::string_view kPrefix = "bit";
  if (!name.starts_with(kPrefix)) return false;
  const char* first = name.data() + kPrefix.size();
  const char* last = name.data() + name.size();
  auto [end, ec] = std::from_chars(first, last, *bit);
  return ec == std::errc() && end == last && first != last && *bit < 64;
}

}  // namespace

std::string_view capability_flag_name(unsigned bit) {
  if (bit >= 64) return kUnknown;
  switch (CB_BIT(bit)) {
    case CB_CAP_STREAM_ORDERED: return "stream_ordered";
    case CB_CAP_NEEDS_PROGRESS: return "needs_progress";
    case CB_CAP_IN_PLACE: return "in_place";
    case CB_CAP_OUT_OF_PLACE: return "out_of_place";
    case CB_CAP_GROUPS: return "groups";
    case CB_CAP_ASYNC: return "async";
    case CB_CAP_GRAPH_CAPTURE: return "graph_capture";
    default: return kUnknown;
  }
}

std::vector<std::string> capability_names(CapabilitySet set, uint64_t mask) {
  std::vector<std::string> names;
  for (unsigned bit = 0; bit < 64; ++bit) {
    if (!(mask & CB_BIT(bit))) continue;
    std::string_view name = bit_name(set, bit);
    names.push_back(name == kUnknown ? fmt::format("bit{}", bit) : std::string(name));
  }
  return names;
}

uint64_t capability_mask(CapabilitySet set, const std::vector<std::string>& names) {
  uint64_t mask = 0;
  for (const std::string& name : names) {
    unsigned bit = 0;
    bool found = parse_raw_bit(name, &bit);
    for (unsigned b = 0; !found && b < 64; ++b) {
      if (bit_name(set, b) == name) {
        bit = b;
        found = true;
      }
    }
    if (!found) throw std::invalid_argument(fmt::format("unknown capability name '{}'", name));
    mask |= CB_BIT(bit);
  }
  return mask;
}

}  // namespace commbench
