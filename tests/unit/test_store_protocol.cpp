// The wire protocol as pure functions: round trips, partial input, and hostile input.
#include <gtest/gtest.h>

#include <random>

#include "bootstrap/byte_codec.h"
#include "bootstrap/wire_protocol.h"

namespace commbench::wire {
namespace {

constexpr size_t kLimit = 1 << 20;

Bytes encoded(const Request& r) {
  Bytes out;
  encode_request(r, out);
  return out;
}

Request parse_ok(const Bytes& bytes) {
  auto result = parse_request(bytes, kLimit);
  auto* parsed = std::get_if<Parsed<Request>>(&result);
  EXPECT_NE(parsed, nullptr) << (std::holds_alternative<ParseError>(result)
                                     ? std::get<ParseError>(result).message
                                     : "need more");
  if (!parsed) return {};
  EXPECT_EQ(parsed->consumed, bytes.size());
  return parsed->message;
}

std::string parse_error(const Bytes& bytes, size_t limit = kLimit) {
  auto result = parse_request(bytes, limit);
  auto* err = std::get_if<ParseError>(&result);
  return err ? err->message : std::string("<no error>");
}

// A frame with the given body, length header computed.
Bytes frame(const Bytes& body) {
  Bytes out;
  ByteWriter w(out);
  w.u32(static_cast<uint32_t>(body.size()));
  w.raw(body.data(), body.size());
  return out;
}

TEST(StoreProtocol, EveryRequestRoundTrips) {
  auto hello = std::get<HelloRequest>(parse_ok(encoded(HelloRequest{kProtocolVersion, Bytes{9, 8, 7}})));
  EXPECT_EQ(hello.nonce, (Bytes{9, 8, 7}));
  EXPECT_EQ(hello.version, kProtocolVersion);

  auto auth = std::get<AuthRequest>(parse_ok(encoded(AuthRequest{Bytes{1, 2, 3, 4}})));
  EXPECT_EQ(auth.proof, (Bytes{1, 2, 3, 4}));

  auto set = std::get<SetRequest>(parse_ok(encoded(SetRequest{"k", Bytes{1, 0, 255}})));
  EXPECT_EQ(set.key, "k");
  EXPECT_EQ(set.value, (Bytes{1, 0, 255}));

  auto get = std::get<GetRequest>(parse_ok(encoded(GetRequest{1234, "key/1"})));
  EXPECT_EQ(get.timeout_ms, 1234u);
  EXPECT_EQ(get.key, "key/1");

  auto mget = std::get<MultiGetRequest>(parse_ok(encoded(MultiGetRequest{7, {"a", "", "ccc"}})));
  EXPECT_EQ(mget.timeout_ms, 7u);
  EXPECT_EQ(mget.keys, (std::vector<std::string>{"a", "", "ccc"}));

  auto add = std::get<AddRequest>(parse_ok(encoded(AddRequest{"n", -42})));
  EXPECT_EQ(add.key, "n");
  EXPECT_EQ(add.delta, -42);

  EXPECT_EQ(std::get<CheckRequest>(parse_ok(encoded(CheckRequest{"c"}))).key, "c");
  EXPECT_EQ(std::get<DeletePrefixRequest>(parse_ok(encoded(DeletePrefixRequest{"p/"}))).prefix,
            "p/");
}

TEST(StoreProtocol, DocumentedExampleIsExact) {
  // docs/bootstrap.md shows these bytes; keep the two in step.
  EXPECT_EQ(encoded(SetRequest{"a", {0x07}}),
            (Bytes{0x0b, 0, 0, 0, 0x02, 0x01, 0, 0, 0, 'a', 0x01, 0, 0, 0, 0x07}));
  Bytes ok;
  encode_ok_empty(ok);
  EXPECT_EQ(ok, (Bytes{0x01, 0, 0, 0, 0x00}));
}

TEST(StoreProtocol, EveryStrictPrefixNeedsMore) {
  const Bytes full = encoded(MultiGetRequest{100, {"alpha", "beta"}});
  for (size_t n = 0; n < full.size(); ++n) {
    std::span<const uint8_t> prefix(full.data(), n);
    EXPECT_TRUE(std::holds_alternative<NeedMore>(parse_request(prefix, kLimit))) << n;
  }
}

TEST(StoreProtocol, BackToBackMessagesParseOneAtATime) {
  Bytes stream = encoded(SetRequest{"a", {1}});
  const size_t first = stream.size();
  encode_request(CheckRequest{"b"}, stream);
  auto r1 = parse_request(stream, kLimit);
  ASSERT_TRUE(std::holds_alternative<Parsed<Request>>(r1));
  EXPECT_EQ(std::get<Parsed<Request>>(r1).consumed, first);
  auto rest = std::span<const uint8_t>(stream).subspan(first);
  auto r2 = parse_request(rest, kLimit);
  ASSERT_TRUE(std::holds_alternative<Parsed<Request>>(r2));
  EXPECT_EQ(std::get<CheckRequest>(std::get<Parsed<Request>>(r2).message).key, "b");
}

TEST(StoreProtocol, OversizedLengthIsAnErrorFromTheHeaderAlone) {
  // Only the 4 header bytes exist: the parser must refuse, not ask for 4 GiB more.
  const Bytes header{0xFF, 0xFF, 0xFF, 0xFF};
  EXPECT_NE(parse_error(header).find("exceeds the limit"), std::string::npos);
  // Exactly at the limit is allowed (and incomplete here).
  Bytes at_limit;
  ByteWriter(at_limit).u32(kLimit);
  EXPECT_TRUE(std::holds_alternative<NeedMore>(parse_request(at_limit, kLimit)));
}

TEST(StoreProtocol, MalformedBodiesAreErrors) {
  EXPECT_NE(parse_error(Bytes{0, 0, 0, 0}).find("empty"), std::string::npos);
  EXPECT_NE(parse_error(frame({99})).find("unknown opcode 99"), std::string::npos);

  // SET whose key claims 1000 bytes but the body holds 3.
  Bytes lying_key{uint8_t(Opcode::Set)};
  ByteWriter(lying_key).u32(1000);
  lying_key.insert(lying_key.end(), {'a', 'b', 'c'});
  EXPECT_NE(parse_error(frame(lying_key)).find("malformed SET"), std::string::npos);

  // MULTI_GET claiming four billion keys in a tiny body: rejected before any allocation.
  Bytes lying_count{uint8_t(Opcode::MultiGet)};
  ByteWriter w(lying_count);
  w.u32(100);
  w.u32(0xFFFFFFFF);
  w.str("k");
  EXPECT_NE(parse_error(frame(lying_count)).find("malformed MULTI_GET"), std::string::npos);

  // Trailing bytes after a complete CHECK.
  Bytes trailing = encoded(CheckRequest{"k"});
  trailing.push_back(0);
  trailing[0] += 1;  // the length covers the extra byte
  EXPECT_NE(parse_error(trailing).find("trailing"), std::string::npos);

  // HELLO with the wrong magic: probably not a commbench client.
  Bytes bad_magic{uint8_t(Opcode::Hello)};
  ByteWriter hw(bad_magic);
  hw.u32(0x12345678);
  hw.u32(kProtocolVersion);
  hw.str("");
  EXPECT_NE(parse_error(frame(bad_magic)).find("malformed HELLO"), std::string::npos);
}

TEST(StoreProtocol, MutatedMessagesNeverCrashOrOverrun) {
  // A poor man's fuzzer until the libFuzzer target exists: flip, drop and insert bytes in valid
  // messages and check the parser stays inside its input. (ASan builds make overruns fatal.)
  const std::vector<Bytes> seeds = {encoded(HelloRequest{kProtocolVersion, Bytes(32, 7)}),
                                    encoded(AuthRequest{Bytes(32, 5)}),
                                    encoded(SetRequest{"key", {1, 2, 3}}),
                                    encoded(GetRequest{10, "k"}),
                                    encoded(MultiGetRequest{5, {"a", "bb", "ccc"}}),
                                    encoded(AddRequest{"n", 1}),
                                    encoded(CheckRequest{"c"}),
                                    encoded(DeletePrefixRequest{"p/"})};
  std::mt19937 rng(12345);
  int parsed = 0, errors = 0;
  for (int i = 0; i < 20000; ++i) {
    Bytes input = seeds[static_cast<size_t>(i) % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits && !input.empty(); ++e) {
      const size_t at = rng() % input.size();
      switch (rng() % 3) {
        case 0: input[at] = static_cast<uint8_t>(rng()); break;
        case 1: input.erase(input.begin() + static_cast<ptrdiff_t>(at)); break;
        default: input.insert(input.begin() + static_cast<ptrdiff_t>(at), uint8_t(rng())); break;
      }
    }
    auto result = parse_request(input, 1024);
    if (auto* p = std::get_if<Parsed<Request>>(&result)) {
      EXPECT_LE(p->consumed, input.size());
      ++parsed;
    } else if (std::holds_alternative<ParseError>(result)) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(parsed, 0);  // edits inside key or value bytes leave a valid message
}

TEST(StoreProtocol, ResponsesRoundTrip) {
  Bytes out;
  ResponseBuilder b(out, Status::Ok);
  ByteWriter w(b.payload());
  w.u32(2);
  w.blob("xy", 2);
  w.blob("", 0);
  b.finish();
  auto r = parse_response(out, kLimit);
  ASSERT_TRUE(std::holds_alternative<Parsed<ResponseFrame>>(r));
  auto frame_ = std::get<Parsed<ResponseFrame>>(r).message;
  EXPECT_EQ(frame_.status, Status::Ok);
  std::vector<Bytes> values;
  ASSERT_TRUE(decode_values(frame_.payload, values));
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0], (Bytes{'x', 'y'}));
  EXPECT_TRUE(values[1].empty());

  Bytes timeout;
  const uint32_t missing[] = {3, 9};
  encode_timeout(timeout, missing);
  auto t = std::get<Parsed<ResponseFrame>>(parse_response(timeout, kLimit)).message;
  EXPECT_EQ(t.status, Status::Timeout);
  std::vector<uint32_t> indices;
  ASSERT_TRUE(decode_missing(t.payload, indices));
  EXPECT_EQ(indices, (std::vector<uint32_t>{3, 9}));

  Bytes failure;
  encode_failure(failure, Status::Rejected, "no");
  auto f = std::get<Parsed<ResponseFrame>>(parse_response(failure, kLimit)).message;
  EXPECT_EQ(f.status, Status::Rejected);
  std::string reason;
  ASSERT_TRUE(decode_reason(f.payload, reason));
  EXPECT_EQ(reason, "no");
}

TEST(StoreProtocol, AValueHeadFollowedByTheValueIsAWholeGetReply) {
  // The server sends a stored value after encode_ok_value_head without copying it into the
  // reply: together they must parse and decode as one GET reply, with nothing left over.
  const Bytes value{'t', 'a', 'b', 'l', 'e'};
  Bytes out;
  EXPECT_EQ(encode_ok_value_head(out, value.size()), 1 + 4 + value.size());
  EXPECT_EQ(out.size(), kFrameHeaderBytes + 1 + 4);
  EXPECT_TRUE(std::holds_alternative<NeedMore>(parse_response(out, kLimit)));
  out.insert(out.end(), value.begin(), value.end());
  auto r = parse_response(out, kLimit);
  ASSERT_TRUE(std::holds_alternative<Parsed<ResponseFrame>>(r));
  const auto& parsed = std::get<Parsed<ResponseFrame>>(r);
  EXPECT_EQ(parsed.consumed, out.size());
  EXPECT_EQ(parsed.message.status, Status::Ok);
  Bytes decoded;
  ASSERT_TRUE(decode_value(parsed.message.payload, decoded));
  EXPECT_EQ(decoded, value);
}

TEST(StoreProtocol, ResponseDecodersRejectLies) {
  Bytes payload;
  ByteWriter(payload).u32(1000);  // claims 1000 values, holds none
  std::vector<Bytes> values;
  EXPECT_FALSE(decode_values(payload, values));
  int64_t v = 0;
  EXPECT_FALSE(decode_int(Bytes{1, 2, 3}, v));  // too short
  bool flag = false;
  EXPECT_FALSE(decode_bool(Bytes{2}, flag));  // neither 0 nor 1
  EXPECT_TRUE(std::holds_alternative<ParseError>(parse_response(frame({77}), kLimit)));
}

TEST(StoreProtocol, CounterEncodingIsEightBytesLittleEndian) {
  const Bytes c = encode_counter(-2);
  EXPECT_EQ(c, (Bytes{0xFE, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
  int64_t v = 0;
  ASSERT_TRUE(decode_counter(c, v));
  EXPECT_EQ(v, -2);
  EXPECT_FALSE(decode_counter(Bytes{1, 2}, v));
}

}  // namespace
}  // namespace commbench::wire
