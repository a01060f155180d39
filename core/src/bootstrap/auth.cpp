#include "bootstrap/auth.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace commbench {
namespace {

constexpr size_t kBlock = 64;  // SHA-256's block size

// Distinct labels, so that a server's proof can never be replayed as a client's (reflection).
std::string_view label(AuthRole role) {
  return role == AuthRole::Server ? "commbench store v2 server" : "commbench store v2 client";
}

}  // namespace

bool tokens_equal(std::string_view expected, std::string_view given) {
  const size_t n = std::max(expected.size(), given.size());
  unsigned diff = expected.size() != given.size() ? 1u : 0u;
  // Visit every byte of the longer string and accumulate differences without branching on them.
  for (size_t i = 0; i < n; ++i) {
    const unsigned char a = i < expected.size() ? static_cast<unsigned char>(expected[i]) : 0;
    const unsigned char b = i < given.size() ? static_cast<unsigned char>(given[i]) : 0;
    diff |= static_cast<unsigned>(a ^ b);
  }
  return diff == 0;
}

Sha256Digest hmac_sha256(std::string_view key, std::string_view message) {
  std::string k(key);
  if (k.size() > kBlock) {
    const Sha256Digest d = sha256(k);
    k.assign(d.begin(), d.end());
  }
  k.resize(kBlock, '\0');
  std::string inner(kBlock, '\0'), outer(kBlock, '\0');
  for (size_t i = 0; i < kBlock; ++i) {
    inner[i] = static_cast<char>(k[i] ^ 0x36);
    outer[i] = static_cast<char>(k[i] ^ 0x5c);
  }
  inner.append(message);
  const Sha256Digest ih = sha256(inner);
  outer.append(ih.begin(), ih.end());
  return sha256(outer);
}

std::vector<uint8_t> random_bytes(size_t count) {
  std::vector<uint8_t> out(count);
  size_t got = 0;
  while (got < count) {
    const ssize_t n = ::getrandom(out.data() + got, count - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(std::string("cannot draw random bytes: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  return out;
}

Sha256Digest auth_proof(std::string_view token, AuthRole role, const std::vector<uint8_t>& client_nonce,
                        const std::vector<uint8_t>& server_nonce) {
  std::string message(label(role));
  message.push_back('\0');
  message.append(client_nonce.begin(), client_nonce.end());
  message.append(server_nonce.begin(), server_nonce.end());
  return hmac_sha256(token, message);
}

bool proof_matches(const Sha256Digest& expected, const std::vector<uint8_t>& given) {
  return tokens_equal(std::string_view(reinterpret_cast<const char*>(expected.data()), expected.size()),
                      std::string_view(reinterpret_cast<const char*>(given.data()), given.size()));
}

}  // namespace commbench
