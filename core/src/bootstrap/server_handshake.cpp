#include "bootstrap/server_handshake.h"

#include <fmt/format.h>

#include "bootstrap/auth.h"

namespace commbench {

std::optional<std::string> answer_hello(StoreConnection& c, const wire::HelloRequest& m, std::string_view token) {
  if (m.version != wire::kProtocolVersion)
    return fmt::format("protocol version mismatch (client {}, server {}); run the same commbench build on every host",
                       m.version, wire::kProtocolVersion);
  if (m.nonce.size() != kAuthNonceBytes)
    return fmt::format("HELLO carries a {}-byte nonce, not {}", m.nonce.size(), kAuthNonceBytes);
  // The server proves itself first, to a client that has not proven anything: its proof is
  // bound to the client's fresh nonce and labelled as the server's, so it cannot be replayed.
  c.client_nonce = m.nonce;
  try {
    c.server_nonce = random_bytes(kAuthNonceBytes);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  const Sha256Digest proof = auth_proof(token, AuthRole::Server, c.client_nonce, c.server_nonce);
  wire::encode_ok_hello(c.out, c.server_nonce, proof);
  c.auth = StoreConnection::Auth::AwaitProof;
  return std::nullopt;
}

std::optional<std::string> answer_auth(StoreConnection& c, const wire::AuthRequest& m, std::string_view token) {
  if (!token.empty() &&
      !proof_matches(auth_proof(token, AuthRole::Client, c.client_nonce, c.server_nonce), m.proof))
    return std::string("wrong or missing token; every agent of a job must use the job's token");
  c.auth = StoreConnection::Auth::Done;
  wire::encode_ok_empty(c.out);
  return std::nullopt;
}

}  // namespace commbench
