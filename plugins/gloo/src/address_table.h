// One rank's pair addresses, packed for the full-mesh connect's bootstrap allgather
// (full_mesh.cpp). gloo's own connect publishes a rank's world - 1 addresses under one store key
// and has every rank read every key: world - 1 reads of world - 1 addresses each, so world³
// addresses through the job's store (281 MB at 128 ranks). Allgathering packed lists moves each
// rank world lists instead, through the hosts' leaders when the job spans hosts. A rank's
// addresses differ from each other in a few bytes (a port or a sequence number), so each is
// packed as the byte runs where it differs from the first: about 7 bytes instead of gloo's 136.
// The bytes stay opaque: nothing here depends on how a transport lays its address out.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace commbench::gloo_backend {

// `addresses[r]` is the address this rank's pair with rank r listens on; its own slot is empty.
std::vector<char> pack_addresses(const std::vector<std::vector<char>>& addresses);

// The address in slot `slot` of a list pack_addresses made. Throws PluginError
// (CB_ERR_INTERNAL) naming `owner` when the list is malformed or has no such slot.
std::vector<char> unpack_address(std::span<const char> packed, int slot, int owner);

}  // namespace commbench::gloo_backend
