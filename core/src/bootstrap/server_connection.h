// One client connection of the store server, as the event loop sees it: its socket, buffered
// input and output, and whether it is parked on missing keys.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "bootstrap/socket.h"
#include "bootstrap/wire_protocol.h"

namespace commbench {

using ConnId = uint64_t;  // never reused, unlike file descriptors

struct StoreConnection {
  ConnId id = 0;
  UniqueFd fd;
  std::string peer;
  wire::Bytes in;  // unparsed input starts at in_begin
  size_t in_begin = 0;
  // The reply being sent: `out` for small replies built per connection, `shared_out` for a
  // MULTI_GET reply that many connections send (all ranks of an allgather get the same bytes,
  // so it is built once); then `out_value`, a stored value sent as it is, after its GET reply's
  // header (a host's 2 MiB table is not copied per reader). Unsent output starts at out_begin,
  // counted over both.
  wire::Bytes out;
  std::shared_ptr<const wire::Bytes> shared_out;
  std::shared_ptr<const wire::Bytes> out_value;
  size_t out_begin = 0;
  // HELLO, then the client's proof (AUTH); only then any other request (bootstrap/auth.h).
  enum class Auth : uint8_t { AwaitHello, AwaitProof, Done };
  Auth auth = Auth::AwaitHello;
  wire::Bytes client_nonce, server_nonce;
  bool close_after_flush = false;         // REJECTED was queued
  std::optional<wire::Opcode> parked_op;  // GET or MULTI_GET waiting in StoreState
  std::chrono::steady_clock::time_point parked_deadline{};
  uint32_t interest = 0;  // the epoll mask currently registered

  bool authenticated() const { return auth == Auth::Done; }
  size_t buffered_input() const { return in.size() - in_begin; }
  const wire::Bytes& output() const { return shared_out ? *shared_out : out; }
  size_t output_size() const { return output().size() + (out_value ? out_value->size() : 0); }
  bool output_pending() const { return out_begin < output_size(); }
  bool busy() const { return parked_op.has_value() || output_pending() || close_after_flush; }
};

}  // namespace commbench
