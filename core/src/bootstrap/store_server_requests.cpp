// What each store request does once its bytes are parsed: HELLO and AUTH, SET, ADD, CHECK,
// DELETE_PREFIX, and the GET / MULTI_GET waits parked until their keys appear or time runs out.
#include <fmt/format.h>

#include "bootstrap/auth.h"
#include "bootstrap/byte_codec.h"
#include "bootstrap/server_handshake.h"
#include "bootstrap/tcp_store_server.h"

namespace commbench::store_server_detail {

void TcpStoreServer::execute(StoreConnection& c, wire::Request&& request) {
  if (auto* m = std::get_if<wire::HelloRequest>(&request)) return hello(c, *m);
  if (auto* m = std::get_if<wire::AuthRequest>(&request)) return authenticate(c, *m);
  if (!c.authenticated()) {
    log(fmt::format("closing connection from {}: {}", c.peer,
                    c.auth == StoreConnection::Auth::AwaitHello ? "the first message must be HELLO"
                                                                : "the message after HELLO must be AUTH"));
    return close_connection(c.id);
  }
  std::vector<StoreState::WaiterId> woken;
  if (auto* m = std::get_if<wire::SetRequest>(&request)) {
    state_.set(m->key, std::move(m->value), woken);
    wire::encode_ok_empty(c.out);
  } else if (auto* m = std::get_if<wire::GetRequest>(&request)) {
    return wait_for(c, wire::Opcode::Get, {std::move(m->key)}, m->timeout_ms);
  } else if (auto* m = std::get_if<wire::MultiGetRequest>(&request)) {
    return wait_for(c, wire::Opcode::MultiGet, std::move(m->keys), m->timeout_ms);
  } else if (auto* m = std::get_if<wire::AddRequest>(&request)) {
    if (auto value = state_.add(m->key, m->delta, woken)) {
      wire::encode_ok_int(c.out, *value);
    } else {
      wire::encode_failure(c.out, wire::Status::Error,
                           fmt::format("key '{}' holds a {}-byte value, not an 8-byte counter; "
                                       "use a separate key for ADD",
                                       m->key, state_.find(m->key)->size()));
    }
  } else if (auto* m = std::get_if<wire::CheckRequest>(&request)) {
    wire::encode_ok_bool(c.out, state_.find(m->key) != nullptr);
  } else if (auto* m = std::get_if<wire::DeletePrefixRequest>(&request)) {
    wire::encode_ok_count(c.out, state_.erase_prefix(m->prefix));
  }
  key_count_.store(state_.key_count(), std::memory_order_relaxed);
  flush(c);
  finish_woken(woken);
}

void TcpStoreServer::hello(StoreConnection& c, const wire::HelloRequest& m) {
  if (c.auth != StoreConnection::Auth::AwaitHello) {
    log(fmt::format("closing connection from {}: second HELLO on one connection", c.peer));
    return close_connection(c.id);
  }
  if (auto why = answer_hello(c, m, opts_.token)) return reject(c, *why);
  flush(c);
}

void TcpStoreServer::authenticate(StoreConnection& c, const wire::AuthRequest& m) {
  if (c.auth != StoreConnection::Auth::AwaitProof) {
    log(fmt::format("closing connection from {}: AUTH {}", c.peer,
                    c.authenticated() ? "on an authenticated connection" : "before HELLO"));
    return close_connection(c.id);
  }
  if (auto why = answer_auth(c, m, opts_.token)) return reject(c, *why);
  pending_.left(c.id);
  flush(c);
}

void TcpStoreServer::reject(StoreConnection& c, const std::string& reason) {
  log(fmt::format("rejected client {}: {}", c.peer, reason));
  wire::encode_failure(c.out, wire::Status::Rejected, reason);
  c.close_after_flush = true;
  flush(c);
}

void TcpStoreServer::wait_for(StoreConnection& c, wire::Opcode op, std::vector<std::string> keys,
                              uint32_t timeout_ms) {
  if (state_.find_all(keys, values_)) return send_shared(c, values_reply(op, keys, values_));
  if (timeout_ms == 0) {
    wire::encode_timeout(c.out, state_.missing(keys));
    return flush(c);
  }
  c.parked_op = op;
  c.parked_deadline = timeout_ms == wire::kNoTimeout
                          ? Clock::time_point::max()
                          : Clock::now() + std::chrono::milliseconds(timeout_ms);
  state_.park(c.id, std::move(keys), c.parked_deadline);
}

TcpStoreServer::ValuesReply TcpStoreServer::values_reply(
    wire::Opcode op, const std::vector<std::string>& keys,
    const std::vector<const wire::Bytes*>& values) {
  auto out = std::make_shared<wire::Bytes>();
  // Size first, so an oversized reply becomes an error message instead of a huge buffer.
  size_t body = 1 + 4;
  for (const auto* v : values) body += 4 + v->size();
  if (body > opts_.max_message_bytes) {
    wire::encode_failure(*out, wire::Status::Error,
                         fmt::format("the reply would be {} bytes, over the store's limit of {}; "
                                     "fetch fewer or smaller values per call",
                                     body, opts_.max_message_bytes));
    return {out, nullptr};
  }
  if (op == wire::Opcode::Get) {
    wire::encode_ok_value_head(*out, values[0]->size());
    return {out, state_.find_shared(keys[0])};
  }
  out->reserve(wire::kFrameHeaderBytes + body);
  wire::ResponseBuilder reply(*out, wire::Status::Ok);
  wire::ByteWriter w(reply.payload());
  if (op == wire::Opcode::MultiGet) w.u32(static_cast<uint32_t>(values.size()));
  for (const auto* v : values) w.blob(v->data(), v->size());
  reply.finish();
  return {out, nullptr};
}

void TcpStoreServer::send_shared(StoreConnection& c, ValuesReply reply) {
  c.shared_out = std::move(reply.bytes);
  c.out_value = std::move(reply.value);
  c.out_begin = 0;
  flush(c);
}

void TcpStoreServer::finish_woken(const std::vector<StoreState::WaiterId>& woken) {
  // Waiters woken by the same SET usually asked for the same keys (every rank of an allgather
  // does): identical value pointers mean identical bytes, so such replies are built once.
  ValuesReply reply;
  std::optional<wire::Opcode> reply_op;
  std::vector<const wire::Bytes*> reply_values;
  for (StoreState::WaiterId id : woken) {
    auto it = conns_.find(id);
    if (it == conns_.end()) continue;
    StoreConnection& c = *it->second;
    std::vector<std::string> keys = state_.take(id);
    if (!state_.find_all(keys, values_)) {  // a DELETE_PREFIX raced with the SET: wait on
      state_.park(id, std::move(keys), c.parked_deadline);
      continue;
    }
    const wire::Opcode op = *c.parked_op;
    c.parked_op.reset();
    if (!reply.bytes || reply_op != op || reply_values != values_) {
      reply = values_reply(op, keys, values_);
      reply_op = op;
      reply_values = values_;
    }
    send_shared(c, reply);
    resume_.push_back(id);
  }
}

void TcpStoreServer::expire_waiters() {
  for (StoreState::WaiterId id : state_.expired(Clock::now())) {
    auto it = conns_.find(id);
    std::vector<std::string> keys = state_.take(id);
    if (it == conns_.end()) continue;
    StoreConnection& c = *it->second;
    const wire::Opcode op = *c.parked_op;
    c.parked_op.reset();
    if (state_.find_all(keys, values_)) {  // completed at the last moment
      send_shared(c, values_reply(op, keys, values_));
    } else {
      wire::encode_timeout(c.out, state_.missing(keys));
      flush(c);
    }
    resume_.push_back(id);
  }
}

}  // namespace commbench::store_server_detail
