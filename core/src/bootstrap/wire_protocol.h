// The store's wire protocol: message types, encoders, and parsers. docs/bootstrap.md has the
// byte layout. Everything here is a pure function over bytes (no sockets, no state), so the
// parsers can be fuzzed directly (a libFuzzer target only needs parse_request/parse_response).
//
// Frame: u32 body_length (little-endian) | body. A request body starts with an opcode, a response
// body with a status; the fields follow. Variable fields are u32 length + bytes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace commbench::wire {

using Bytes = std::vector<uint8_t>;

inline constexpr uint32_t kMagic = 0x54534243;  // "CBST" in little-endian byte order
// 2: mutual authentication (HELLO carries a nonce, not the token; AUTH carries the client's proof).
// 3: no wire change; the agents' own protocol on it changed (agree answers through agents/go,
// leave notices are typed), so tasks of builds before it are refused at HELLO, naming the
// mismatch, instead of waiting for each other until a timeout.
inline constexpr uint32_t kProtocolVersion = 3;
inline constexpr size_t kFrameHeaderBytes = 4;
// timeout_ms on the wire; this value means "wait without limit".
inline constexpr uint32_t kNoTimeout = 0xFFFFFFFFu;
// Largest message the server takes before a client has authenticated: HELLO and AUTH are tens of
// bytes, so nobody who does not know the token can make it buffer more than this.
inline constexpr size_t kMaxUnauthenticatedMessage = 4096;

enum class Opcode : uint8_t {
  Hello = 1,
  Set = 2,
  Get = 3,
  MultiGet = 4,
  Add = 5,
  Check = 6,
  DeletePrefix = 7,
  Auth = 8,
};

enum class Status : uint8_t {
  Ok = 0,
  Timeout = 1,   // payload: the indices of the keys still missing
  Rejected = 2,  // payload: reason; the server closes the connection after it
  Error = 3,     // payload: reason (e.g. ADD on a value that is not a counter)
};

// ------------------------------------------------------------------ requests

struct HelloRequest {
  uint32_t version = kProtocolVersion;
  Bytes nonce;  // the client's fresh random nonce (bootstrap/auth.h)
};
// The client's proof that it knows the token, after it checked the server's (bootstrap/auth.h).
struct AuthRequest {
  Bytes proof;
};
struct SetRequest {
  std::string key;
  Bytes value;
};
struct GetRequest {
  uint32_t timeout_ms = kNoTimeout;
  std::string key;
};
struct MultiGetRequest {
  uint32_t timeout_ms = kNoTimeout;
  std::vector<std::string> keys;
};
struct AddRequest {
  std::string key;
  int64_t delta = 0;
};
struct CheckRequest {
  std::string key;
};
struct DeletePrefixRequest {
  std::string prefix;
};

using Request = std::variant<HelloRequest, SetRequest, GetRequest, MultiGetRequest, AddRequest,
                             CheckRequest, DeletePrefixRequest, AuthRequest>;

// ------------------------------------------------------------------ parse results

// A whole message was decoded; `consumed` bytes (header included) may be dropped from the input.
template <typename T>
struct Parsed {
  T message;
  size_t consumed = 0;
};
// The input is a valid prefix of a message; read more bytes and call again.
struct NeedMore {};
// The input can never become a valid message; close the connection.
struct ParseError {
  std::string message;
};

using RequestParse = std::variant<Parsed<Request>, NeedMore, ParseError>;

// Decodes the first request in `input`. A declared length above `max_message_bytes` is an error
// as soon as the 4-byte header is visible, before any of the body arrives, so an attacker cannot
// make the caller buffer more than max_message_bytes + 4 bytes.
RequestParse parse_request(std::span<const uint8_t> input, size_t max_message_bytes);

// Appends one framed request to `out`.
void encode_request(const Request& request, Bytes& out);

// ------------------------------------------------------------------ responses

// A response frame split into status and the still-encoded payload, which only makes sense
// together with the request it answers (see the decode_* helpers below).
struct ResponseFrame {
  Status status = Status::Ok;
  std::span<const uint8_t> payload;  // points into the parsed input
};

using ResponseParse = std::variant<Parsed<ResponseFrame>, NeedMore, ParseError>;
ResponseParse parse_response(std::span<const uint8_t> input, size_t max_message_bytes);

// Builds a response frame in place: begin() reserves the header, the caller appends the payload
// with a ByteWriter, finish() patches the length. Avoids copying large MULTI_GET payloads twice.
class ResponseBuilder {
 public:
  ResponseBuilder(Bytes& out, Status status);
  Bytes& payload() { return out_; }
  // Returns the body size (status + payload) so the caller can enforce its message limit.
  size_t finish();

 private:
  Bytes& out_;
  size_t header_at_;
};

void encode_ok_empty(Bytes& out);
// HELLO's answer: the server's version, its nonce and its proof.
void encode_ok_hello(Bytes& out, std::span<const uint8_t> server_nonce, std::span<const uint8_t> server_proof);
// GET's OK reply up to its value, whose `value_size` bytes the caller sends right after (the
// store sends a stored value without copying it). Returns the body size, value included.
size_t encode_ok_value_head(Bytes& out, size_t value_size);
void encode_ok_int(Bytes& out, int64_t value);     // ADD
void encode_ok_bool(Bytes& out, bool value);       // CHECK
void encode_ok_count(Bytes& out, uint64_t count);  // DELETE_PREFIX
void encode_timeout(Bytes& out, std::span<const uint32_t> missing_indices);
void encode_failure(Bytes& out, Status status, std::string_view reason);  // REJECTED / ERROR

// Payload decoders for the client; each returns false on a malformed payload.
bool decode_value(std::span<const uint8_t> payload, Bytes& value);                 // GET
bool decode_values(std::span<const uint8_t> payload, std::vector<Bytes>& values);  // MULTI_GET
// MULTI_GET without copies: views into `payload`.
bool decode_value_views(std::span<const uint8_t> payload,
                        std::vector<std::span<const uint8_t>>& views);
bool decode_int(std::span<const uint8_t> payload, int64_t& value);     // ADD
bool decode_bool(std::span<const uint8_t> payload, bool& value);       // CHECK
bool decode_count(std::span<const uint8_t> payload, uint64_t& count);  // DELETE_PREFIX
bool decode_hello(std::span<const uint8_t> payload, uint32_t& version, Bytes& server_nonce,
                  Bytes& server_proof);
bool decode_missing(std::span<const uint8_t> payload, std::vector<uint32_t>& indices);
bool decode_reason(std::span<const uint8_t> payload, std::string& reason);

// ADD keeps its counter as an 8-byte little-endian int64 value; GET returns those 8 bytes.
Bytes encode_counter(int64_t value);
bool decode_counter(std::span<const uint8_t> value, int64_t& out);

const char* opcode_name(Opcode op);

}  // namespace commbench::wire
