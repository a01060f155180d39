// The store server's side of the mutual authentication (bootstrap/auth.h) on one connection, as
// functions over the connection's state and output buffer: no sockets, no logging.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "bootstrap/server_connection.h"
#include "bootstrap/wire_protocol.h"

namespace commbench {

// HELLO on a connection that awaits it: the OK reply (the server's nonce and proof) is appended
// to c.out and c awaits the client's proof; or the reason to reject the client.
std::optional<std::string> answer_hello(StoreConnection& c, const wire::HelloRequest& m, std::string_view token);

// AUTH on a connection that awaits it: c is authenticated and OK appended; or the reason to
// reject it. A server without a token accepts any proof (tests only: every job has a token).
std::optional<std::string> answer_auth(StoreConnection& c, const wire::AuthRequest& m, std::string_view token);

}  // namespace commbench
