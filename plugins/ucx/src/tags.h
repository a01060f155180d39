// How a 64-bit UCP tag is split. UCP matches receives on the tag alone (not on the sender), so
// the sender's rank is part of every tag, and collectives get their own space so that a user's
// send/recv can never match a message of a collective:
//
//   bit 63      1 = collective, 0 = send/recv of the core
//   bits 32-62  send/recv: the ABI's tag (31 bits)
//               collective: sequence number (bits 44-62, 19 bits) and step (bits 32-43, 12 bits)
//   bits 0-31   the sender's rank
//
// Sequence numbers and steps wrap; messages between one pair with the same tag are matched in
// the order they were sent (UCP's ordering), so a wrap a whole collective later is harmless.
#pragma once

#include <cstdint>

#include <ucp/api/ucp.h>

#include "collectives/channel.h"

namespace commbench::ucx_backend {

inline constexpr ucp_tag_t kFullTagMask = ~ucp_tag_t{0};
inline constexpr uint32_t kMaxUserTag = (uint32_t{1} << 31) - 1;

inline ucp_tag_t user_tag(uint32_t tag, int src) {
  return (static_cast<ucp_tag_t>(tag & kMaxUserTag) << 32) | static_cast<uint32_t>(src);
}

inline ucp_tag_t collective_tag(uint32_t sequence, uint32_t step, int src) {
  return (ucp_tag_t{1} << 63) | (static_cast<ucp_tag_t>(sequence & 0x7FFFFu) << 44) |
         (static_cast<ucp_tag_t>(step % kChannelSteps) << 32) | static_cast<uint32_t>(src);
}

}  // namespace commbench::ucx_backend
