// The store's mutual authentication (docs/bootstrap.md, "Sessions and authentication"): both
// sides prove that they know the job's token without sending it. The client sends a fresh nonce,
// the server answers with its own nonce and HMAC-SHA256(token, server label | both nonces), the
// client checks that proof before it sends anything that depends on the token, then proves
// itself with HMAC-SHA256(token, client label | both nonces). A listener that does not know the
// token (a planted rendezvous address, a stale port) learns nothing it could replay.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/sha256.h"

namespace commbench {

inline constexpr size_t kAuthNonceBytes = 32;

// True when `given` equals `expected`. Takes time that depends only on the two lengths, never on
// where the first difference is, so a token cannot be guessed byte by byte from response times.
bool tokens_equal(std::string_view expected, std::string_view given);

// HMAC-SHA256 (RFC 2104) of `message` under `key`.
Sha256Digest hmac_sha256(std::string_view key, std::string_view message);

// `count` bytes from the kernel's random source. Throws std::runtime_error when it cannot.
std::vector<uint8_t> random_bytes(size_t count);

enum class AuthRole { Server, Client };

// The proof `role` gives for one connection: HMAC over the role's label and both nonces.
Sha256Digest auth_proof(std::string_view token, AuthRole role, const std::vector<uint8_t>& client_nonce,
                        const std::vector<uint8_t>& server_nonce);

// Constant-time comparison of a received proof with the expected one.
bool proof_matches(const Sha256Digest& expected, const std::vector<uint8_t>& given);

}  // namespace commbench
