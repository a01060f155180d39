#include "bootstrap/wire_protocol.h"

#include <fmt/format.h>

#include "bootstrap/byte_codec.h"

namespace commbench::wire {
namespace {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

// Splits off one frame: the shared first step of both parsers. On success `body` views the
// frame's body and `consumed` counts header + body.
std::variant<std::span<const uint8_t>, NeedMore, ParseError> split_frame(
    std::span<const uint8_t> input, size_t max_message_bytes) {
  ByteReader header(input);
  uint32_t length = 0;
  if (!header.u32(length)) return NeedMore{};
  if (length == 0) return ParseError{"empty message (length field is 0)"};
  if (length > max_message_bytes) {
    return ParseError{
        fmt::format("message length {} exceeds the limit of {} bytes", length, max_message_bytes)};
  }
  if (input.size() - kFrameHeaderBytes < length) return NeedMore{};
  return input.subspan(kFrameHeaderBytes, length);
}

bool read_request_fields(Opcode op, ByteReader& r, Request& out) {
  switch (op) {
    case Opcode::Hello: {
      HelloRequest m;
      uint32_t magic = 0;
      if (!r.u32(magic) || magic != kMagic || !r.u32(m.version) || !r.bytes(m.nonce)) return false;
      out = std::move(m);
      return true;
    }
    case Opcode::Set: {
      SetRequest m;
      if (!r.str(m.key) || !r.bytes(m.value)) return false;
      out = std::move(m);
      return true;
    }
    case Opcode::Get: {
      GetRequest m;
      if (!r.u32(m.timeout_ms) || !r.str(m.key)) return false;
      out = std::move(m);
      return true;
    }
    case Opcode::MultiGet: {
      MultiGetRequest m;
      uint32_t count = 0;
      if (!r.u32(m.timeout_ms) || !r.u32(count)) return false;
      // Every key costs at least its 4-byte length, so a count the body cannot hold is a lie;
      // checking before reserve() keeps a hostile count from allocating anything.
      if (count > r.remaining() / 4) return false;
      m.keys.resize(count);
      for (auto& key : m.keys) {
        if (!r.str(key)) return false;
      }
      out = std::move(m);
      return true;
    }
    case Opcode::Add: {
      AddRequest m;
      if (!r.str(m.key) || !r.i64(m.delta)) return false;
      out = std::move(m);
      return true;
    }
    case Opcode::Check: {
      CheckRequest m;
      if (!r.str(m.key)) return false;
      out = std::move(m);
      return true;
    }
    case Opcode::DeletePrefix: {
      DeletePrefixRequest m;
      if (!r.str(m.prefix)) return false;
      out = std::move(m);
      return true;
    }
    case Opcode::Auth: {
      AuthRequest m;
      if (!r.bytes(m.proof)) return false;
      out = std::move(m);
      return true;
    }
  }
  return false;
}

bool known_opcode(uint8_t op) {
  return op >= static_cast<uint8_t>(Opcode::Hello) &&
         op <= static_cast<uint8_t>(Opcode::Auth);
}

bool known_status(uint8_t s) {
  return s <= static_cast<uint8_t>(Status::Error);
}

}  // namespace

const char* opcode_name(Opcode op) {
  switch (op) {
    case Opcode::Hello: return "HELLO";
    case Opcode::Set: return "SET";
    case Opcode::Get: return "GET";
    case Opcode::MultiGet: return "MULTI_GET";
    case Opcode::Add: return "ADD";
    case Opcode::Check: return "CHECK";
    case Opcode::DeletePrefix: return "DELETE_PREFIX";
    case Opcode::Auth: return "AUTH";
  }
  return "UNKNOWN";
}

RequestParse parse_request(std::span<const uint8_t> input, size_t max_message_bytes) {
  auto frame = split_frame(input, max_message_bytes);
  if (auto* need = std::get_if<NeedMore>(&frame)) return *need;
  if (auto* err = std::get_if<ParseError>(&frame)) return std::move(*err);
  auto body = std::get<std::span<const uint8_t>>(frame);

  ByteReader r(body);
  uint8_t op_byte = 0;
  r.u8(op_byte);  // cannot fail: split_frame rejects empty bodies
  if (!known_opcode(op_byte)) return ParseError{fmt::format("unknown opcode {}", op_byte)};
  auto op = static_cast<Opcode>(op_byte);

  Request request;
  if (!read_request_fields(op, r, request)) {
    return ParseError{
        fmt::format("malformed {} request: a field is missing, runs past the end of "
                    "the {}-byte message, or has a bad value",
                    opcode_name(op), body.size())};
  }
  if (!r.at_end()) {
    return ParseError{fmt::format("malformed {} request: {} unexpected trailing bytes",
                                  opcode_name(op), r.remaining())};
  }
  return Parsed<Request>{std::move(request), kFrameHeaderBytes + body.size()};
}

void encode_request(const Request& request, Bytes& out) {
  const size_t header_at = out.size();
  out.resize(header_at + kFrameHeaderBytes);
  ByteWriter w(out);
  std::visit(Overloaded{
                 [&](const HelloRequest& m) {
                   w.u8(static_cast<uint8_t>(Opcode::Hello));
                   w.u32(kMagic);
                   w.u32(m.version);
                   w.blob(m.nonce.data(), m.nonce.size());
                 },
                 [&](const SetRequest& m) {
                   w.u8(static_cast<uint8_t>(Opcode::Set));
                   w.str(m.key);
                   w.blob(m.value.data(), m.value.size());
                 },
                 [&](const GetRequest& m) {
                   w.u8(static_cast<uint8_t>(Opcode::Get));
                   w.u32(m.timeout_ms);
                   w.str(m.key);
                 },
                 [&](const MultiGetRequest& m) {
                   w.u8(static_cast<uint8_t>(Opcode::MultiGet));
                   w.u32(m.timeout_ms);
                   w.u32(static_cast<uint32_t>(m.keys.size()));
                   for (const auto& key : m.keys) w.str(key);
                 },
                 [&](const AddRequest& m) {
                   w.u8(static_cast<uint8_t>(Opcode::Add));
                   w.str(m.key);
                   w.i64(m.delta);
                 },
                 [&](const CheckRequest& m) {
                   w.u8(static_cast<uint8_t>(Opcode::Check));
                   w.str(m.key);
                 },
                 [&](const DeletePrefixRequest& m) {
                   w.u8(static_cast<uint8_t>(Opcode::DeletePrefix));
                   w.str(m.prefix);
                 },
                 [&](const AuthRequest& m) {
                   w.u8(static_cast<uint8_t>(Opcode::Auth));
                   w.blob(m.proof.data(), m.proof.size());
                 },
             },
             request);
  const auto body = static_cast<uint32_t>(out.size() - header_at - kFrameHeaderBytes);
  for (size_t i = 0; i < kFrameHeaderBytes; ++i) out[header_at + i] = uint8_t(body >> (8 * i));
}

// ------------------------------------------------------------------ responses

ResponseParse parse_response(std::span<const uint8_t> input, size_t max_message_bytes) {
  auto frame = split_frame(input, max_message_bytes);
  if (auto* need = std::get_if<NeedMore>(&frame)) return *need;
  if (auto* err = std::get_if<ParseError>(&frame)) return std::move(*err);
  auto body = std::get<std::span<const uint8_t>>(frame);
  if (!known_status(body[0])) return ParseError{fmt::format("unknown response status {}", body[0])};
  return Parsed<ResponseFrame>{ResponseFrame{static_cast<Status>(body[0]), body.subspan(1)},
                               kFrameHeaderBytes + body.size()};
}

ResponseBuilder::ResponseBuilder(Bytes& out, Status status) : out_(out), header_at_(out.size()) {
  out_.resize(header_at_ + kFrameHeaderBytes);
  out_.push_back(static_cast<uint8_t>(status));
}

size_t ResponseBuilder::finish() {
  const size_t body = out_.size() - header_at_ - kFrameHeaderBytes;
  for (size_t i = 0; i < kFrameHeaderBytes; ++i) {
    out_[header_at_ + i] = static_cast<uint8_t>(static_cast<uint32_t>(body) >> (8 * i));
  }
  return body;
}

void encode_ok_empty(Bytes& out) {
  ResponseBuilder(out, Status::Ok).finish();
}

void encode_ok_hello(Bytes& out, std::span<const uint8_t> server_nonce, std::span<const uint8_t> server_proof) {
  ResponseBuilder b(out, Status::Ok);
  ByteWriter w(b.payload());
  w.u32(kProtocolVersion);
  w.blob(server_nonce.data(), server_nonce.size());
  w.blob(server_proof.data(), server_proof.size());
  b.finish();
}

size_t encode_ok_value_head(Bytes& out, size_t value_size) {
  const size_t at = out.size();
  ResponseBuilder b(out, Status::Ok);
  ByteWriter(b.payload()).u32(static_cast<uint32_t>(value_size));
  const size_t body = b.finish() + value_size;
  for (size_t i = 0; i < kFrameHeaderBytes; ++i) {  // the frame's length counts the value too
    out[at + i] = static_cast<uint8_t>(static_cast<uint32_t>(body) >> (8 * i));
  }
  return body;
}

void encode_ok_int(Bytes& out, int64_t value) {
  ResponseBuilder b(out, Status::Ok);
  ByteWriter(b.payload()).i64(value);
  b.finish();
}

void encode_ok_bool(Bytes& out, bool value) {
  ResponseBuilder b(out, Status::Ok);
  ByteWriter(b.payload()).u8(value ? 1 : 0);
  b.finish();
}

void encode_ok_count(Bytes& out, uint64_t count) {
  ResponseBuilder b(out, Status::Ok);
  ByteWriter(b.payload()).u64(count);
  b.finish();
}

void encode_timeout(Bytes& out, std::span<const uint32_t> missing_indices) {
  ResponseBuilder b(out, Status::Timeout);
  ByteWriter w(b.payload());
  w.u32(static_cast<uint32_t>(missing_indices.size()));
  for (uint32_t i : missing_indices) w.u32(i);
  b.finish();
}

void encode_failure(Bytes& out, Status status, std::string_view reason) {
  ResponseBuilder b(out, status);
  ByteWriter(b.payload()).str(reason);
  b.finish();
}

namespace {
// Runs `read` over the payload and insists it consumed everything.
template <typename F>
bool decode_all(std::span<const uint8_t> payload, F&& read) {
  ByteReader r(payload);
  return read(r) && r.at_end();
}
}  // namespace

bool decode_value(std::span<const uint8_t> payload, Bytes& value) {
  return decode_all(payload, [&](ByteReader& r) { return r.bytes(value); });
}

bool decode_value_views(std::span<const uint8_t> payload,
                        std::vector<std::span<const uint8_t>>& views) {
  return decode_all(payload, [&](ByteReader& r) {
    uint32_t count = 0;
    if (!r.u32(count) || count > r.remaining() / 4) return false;
    views.resize(count);
    for (auto& v : views) {
      if (!r.blob(v)) return false;
    }
    return true;
  });
}

bool decode_values(std::span<const uint8_t> payload, std::vector<Bytes>& values) {
  std::vector<std::span<const uint8_t>> views;
  if (!decode_value_views(payload, views)) return false;
  values.resize(views.size());
  for (size_t i = 0; i < views.size(); ++i) values[i].assign(views[i].begin(), views[i].end());
  return true;
}

bool decode_int(std::span<const uint8_t> payload, int64_t& value) {
  return decode_all(payload, [&](ByteReader& r) { return r.i64(value); });
}

bool decode_bool(std::span<const uint8_t> payload, bool& value) {
  return decode_all(payload, [&](ByteReader& r) {
    uint8_t b = 0;
    if (!r.u8(b) || b > 1) return false;
    value = b == 1;
    return true;
  });
}

bool decode_count(std::span<const uint8_t> payload, uint64_t& count) {
  return decode_all(payload, [&](ByteReader& r) { return r.u64(count); });
}

bool decode_hello(std::span<const uint8_t> payload, uint32_t& version, Bytes& server_nonce,
                  Bytes& server_proof) {
  return decode_all(payload, [&](ByteReader& r) {
    return r.u32(version) && r.bytes(server_nonce) && r.bytes(server_proof);
  });
}

bool decode_missing(std::span<const uint8_t> payload, std::vector<uint32_t>& indices) {
  return decode_all(payload, [&](ByteReader& r) {
    uint32_t count = 0;
    if (!r.u32(count) || count > r.remaining() / 4) return false;
    indices.resize(count);
    for (auto& i : indices) {
      if (!r.u32(i)) return false;
    }
    return true;
  });
}

bool decode_reason(std::span<const uint8_t> payload, std::string& reason) {
  return decode_all(payload, [&](ByteReader& r) { return r.str(reason); });
}

Bytes encode_counter(int64_t value) {
  Bytes out;
  ByteWriter(out).i64(value);
  return out;
}

bool decode_counter(std::span<const uint8_t> value, int64_t& out) {
  return decode_all(value, [&](ByteReader& r) { return r.i64(out); });
}

}  // namespace commbench::wire
