// SHA-256 (FIPS 180-4) of a byte string: as lowercase hex, the experiment file's hash in the
// metadata (comparable with `sha256sum`); as raw bytes, the hash under the store's HMAC
// (bootstrap/auth.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace commbench {

using Sha256Digest = std::array<uint8_t, 32>;

Sha256Digest sha256(std::string_view data);
std::string sha256_hex(std::string_view data);

}  // namespace commbench
