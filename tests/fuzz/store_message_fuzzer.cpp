// libFuzzer target: the bootstrap store's wire-protocol parsers, fed arbitrary bytes as a client
// (requests) or a server (responses) could send them. Properties checked beyond "no crash, no
// sanitizer report": a parsed request never claims more bytes than it was given, and every
// parsed request re-encodes to a frame that parses back to the same encoding.
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "bootstrap/wire_protocol.h"

using namespace commbench;
using namespace commbench::wire;

namespace {

constexpr size_t kMaxMessage = 1 << 16;

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void requests(std::span<const uint8_t> in) {
  const RequestParse r = parse_request(in, kMaxMessage);
  const auto* parsed = std::get_if<Parsed<Request>>(&r);
  if (parsed == nullptr) return;
  check(parsed->consumed >= 5 && parsed->consumed <= in.size());
  Bytes once;
  encode_request(parsed->message, once);
  const RequestParse again = parse_request(once, kMaxMessage + 64);
  const auto* reparsed = std::get_if<Parsed<Request>>(&again);
  check(reparsed != nullptr && reparsed->consumed == once.size());
  Bytes twice;
  encode_request(reparsed->message, twice);
  check(twice == once);
}

void responses(std::span<const uint8_t> in) {
  const ResponseParse r = parse_response(in, kMaxMessage);
  const auto* parsed = std::get_if<Parsed<ResponseFrame>>(&r);
  if (parsed == nullptr) return;
  check(parsed->consumed <= in.size());
  // Whatever the payload, every decoder must fail cleanly or succeed; none may overread.
  const std::span<const uint8_t> p = parsed->message.payload;
  Bytes value;
  std::vector<Bytes> values;
  int64_t i = 0;
  bool b = false;
  uint64_t n = 0;
  uint32_t v = 0;
  std::vector<uint32_t> missing;
  std::string reason;
  (void)decode_value(p, value);
  (void)decode_values(p, values);
  (void)decode_int(p, i);
  (void)decode_bool(p, b);
  (void)decode_count(p, n);
  Bytes nonce, proof;
  (void)decode_hello(p, v, nonce, proof);
  (void)decode_missing(p, missing);
  (void)decode_reason(p, reason);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> in(data, size);
  requests(in);
  responses(in);
  return 0;
}
