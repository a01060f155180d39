// The server against bad clients: wrong tokens, hostile lengths, garbage, slow senders, and
// clients that vanish mid-wait. Each case checks that the offender is cut off and that the
// server keeps serving everyone else.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "bootstrap/auth.h"
#include "bootstrap/byte_codec.h"
#include "test_store_helpers.h"

namespace commbench {
namespace {

using namespace test;

// The server still answers a well-behaved client.
void expect_serving(const StoreServer& server, const std::string& token = "") {
  auto client = connect_to(server, token);
  client->set("alive", bytes_of("yes"));
  EXPECT_EQ(string_of(client->get("alive", 1s)), "yes");
}

TEST(StoreRobustness, TokenComparison) {
  EXPECT_TRUE(tokens_equal("s3cret", "s3cret"));
  EXPECT_TRUE(tokens_equal("", ""));
  EXPECT_FALSE(tokens_equal("s3cret", "s3cre"));    // prefix
  EXPECT_FALSE(tokens_equal("s3cret", "s3cret0"));  // extension
  EXPECT_FALSE(tokens_equal("s3cret", "S3cret"));
  EXPECT_FALSE(tokens_equal("s3cret", ""));
  EXPECT_FALSE(tokens_equal(std::string_view("a\0", 2), "a"));  // embedded NUL is not an end
}

TEST(StoreRobustness, MatchingTokenIsAccepted) {
  auto server = start_server(nullptr, "s3cret");
  expect_serving(*server, "s3cret");
}

TEST(StoreRobustness, WrongOrMissingTokenIsRejectedAndLogged) {
  CapturedLog log;
  auto server = start_server(&log, "s3cret");
  for (const std::string bad : {"", "s3cre", "s3cret!", "S3CRET"}) {
    try {
      StoreClient::connect(server->host(), server->port(), 2s, bad);
      ADD_FAILURE() << "token '" << bad << "' was accepted";
    } catch (const StoreError& e) {
      EXPECT_EQ(e.code(), StoreError::Code::Rejected) << e.what();
      EXPECT_NE(std::string(e.what()).find("token"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(log.contains("rejected client"));
  expect_serving(*server, "s3cret");
}

TEST(StoreRobustness, ServerWithoutTokenAcceptsAnyToken) {
  auto server = start_server();
  expect_serving(*server, "whatever");
}

TEST(StoreRobustness, FourGigabyteLengthHeaderIsCutOffWithoutAllocating) {
  CapturedLog log;
  auto server = start_server(&log);
  RawSocket attacker(server->port());
  ASSERT_TRUE(attacker.connected());
  ASSERT_TRUE(attacker.hello());
  // Header only: if the server waited for (or reserved) the claimed body, this would hang or
  // allocate 4 GiB; it must close the connection right away.
  ASSERT_TRUE(attacker.send_bytes(Bytes{0xFF, 0xFF, 0xFF, 0xFF, uint8_t(wire::Opcode::Set)}));
  EXPECT_TRUE(attacker.closed_by_peer(2s));
  EXPECT_TRUE(log.contains("message length 4294967295 exceeds the limit"));
  expect_serving(*server);
}

TEST(StoreRobustness, OversizedHeaderBeforeHelloIsCutOffToo) {
  auto server = start_server();
  RawSocket attacker(server->port());
  ASSERT_TRUE(attacker.send_bytes(Bytes{0x00, 0x00, 0x00, 0x7F}));
  EXPECT_TRUE(attacker.closed_by_peer(2s));
  expect_serving(*server);
}

TEST(StoreRobustness, GarbageBytesCloseTheConnection) {
  CapturedLog log;
  auto server = start_server(&log);
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    RawSocket attacker(server->port());
    ASSERT_TRUE(attacker.connected());
    // A plausible small length followed by random bytes, or a plain text line.
    Bytes junk;
    if (round % 2 == 0) {
      wire::ByteWriter w(junk);
      w.u32(16);
      for (int i = 0; i < 16; ++i) w.u8(static_cast<uint8_t>(rng() % 256));
      junk[4] = static_cast<uint8_t>(100 + round);  // an opcode that does not exist
    } else {
      junk = bytes_of("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    ASSERT_TRUE(attacker.send_bytes(junk));
    EXPECT_TRUE(attacker.closed_by_peer(2s)) << "round " << round;
  }
  EXPECT_TRUE(log.contains("closing connection"));
  expect_serving(*server);
}

TEST(StoreRobustness, RequestBeforeHelloIsRefused) {
  CapturedLog log;
  auto server = start_server(&log);
  RawSocket sneaky(server->port());
  ASSERT_TRUE(sneaky.send_request(wire::SetRequest{"k", bytes_of("v")}));
  EXPECT_TRUE(sneaky.closed_by_peer(2s));
  EXPECT_TRUE(log.contains("first message must be HELLO"));
  auto client = connect_to(*server);
  EXPECT_FALSE(client->check("k"));
}

TEST(StoreRobustness, ByteByByteSenderIsServed) {
  // Partial reads on the server: every byte arrives in its own segment.
  auto server = start_server();
  RawSocket slow(server->port());
  ASSERT_TRUE(slow.hello());
  Bytes request;
  wire::encode_request(wire::SetRequest{"slow", bytes_of("value")}, request);
  for (uint8_t byte : request) {
    ASSERT_TRUE(slow.send_bytes(Bytes{byte}));
    std::this_thread::sleep_for(1ms);
  }
  Bytes reply = slow.read_reply(2s);
  ASSERT_FALSE(reply.empty());
  EXPECT_EQ(reply[wire::kFrameHeaderBytes], uint8_t(wire::Status::Ok));
  auto client = connect_to(*server);
  EXPECT_EQ(string_of(client->get("slow", 1s)), "value");
}

TEST(StoreRobustness, PipelinedRequestsAreAnsweredInOrder) {
  auto server = start_server();
  RawSocket pipelined(server->port());
  ASSERT_TRUE(pipelined.hello());
  Bytes batch;
  wire::encode_request(wire::GetRequest{10000, "later"}, batch);  // parks
  wire::encode_request(wire::AddRequest{"n", 5}, batch);          // must wait behind the GET
  ASSERT_TRUE(pipelined.send_bytes(batch));
  auto setter = connect_to(*server);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(setter->check("n")) << "the ADD ran before the parked GET finished";
  setter->set("later", bytes_of("L"));
  Bytes first = pipelined.read_reply(5s);
  Bytes second = pipelined.read_reply(5s);
  ASSERT_FALSE(first.empty());
  ASSERT_FALSE(second.empty());
  auto value = std::get<wire::Parsed<wire::ResponseFrame>>(wire::parse_response(first, 1 << 20));
  Bytes got;
  ASSERT_TRUE(wire::decode_value(value.message.payload, got));
  EXPECT_EQ(string_of(got), "L");
  auto sum = std::get<wire::Parsed<wire::ResponseFrame>>(wire::parse_response(second, 1 << 20));
  int64_t n = 0;
  ASSERT_TRUE(wire::decode_int(sum.message.payload, n));
  EXPECT_EQ(n, 5);
}

TEST(StoreRobustness, ClientVanishingWhileParkedIsForgotten) {
  auto server = start_server();
  for (int i = 0; i < 10; ++i) {
    RawSocket quitter(server->port());
    ASSERT_TRUE(quitter.hello());
    ASSERT_TRUE(quitter.send_request(wire::MultiGetRequest{wire::kNoTimeout, {"gone", "x"}}));
  }  // closed while parked
  std::this_thread::sleep_for(50ms);
  auto client = connect_to(*server);
  client->set("gone", bytes_of("1"));
  client->set("x", bytes_of("2"));  // would write to closed connections if they were remembered
  expect_serving(*server);
}

TEST(StoreRobustness, ProtocolVersionMismatchIsRejected) {
  auto server = start_server();
  RawSocket future(server->port());
  ASSERT_TRUE(future.send_request(wire::HelloRequest{wire::kProtocolVersion + 1, ""}));
  Bytes reply = future.read_reply(2s);
  ASSERT_FALSE(reply.empty());
  EXPECT_EQ(reply[wire::kFrameHeaderBytes], uint8_t(wire::Status::Rejected));
  EXPECT_TRUE(future.closed_by_peer(2s));
}

}  // namespace
}  // namespace commbench
