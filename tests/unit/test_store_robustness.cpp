// The server against bad clients: wrong tokens, hostile lengths, garbage, slow senders, and
// clients that vanish mid-wait. Each case checks that the offender is cut off and that the
// server keeps serving everyone else.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include <fmt/format.h>

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
      // The client finds out first: the store's proof does not match its token.
      EXPECT_EQ(e.code(), StoreError::Code::Rejected) << e.what();
      EXPECT_NE(std::string(e.what()).find("token"), std::string::npos) << e.what();
    }
  }
  // A client that ignores that and answers with a proof for another token is refused and logged.
  RawSocket liar(server->port());
  EXPECT_FALSE(liar.hello("not-the-token"));
  EXPECT_TRUE(log.contains("rejected client"));
  expect_serving(*server, "s3cret");
}

TEST(StoreRobustness, ServerWithoutTokenServesClientsWithoutToken) {
  auto server = start_server();
  expect_serving(*server, "");
}

// Issue 28 §1: a listener that does not know the token (planted in a rendezvous file) must
// learn nothing from a client. The token never crosses the wire, and the client refuses to go
// on once the listener's proof is wrong: it sends HELLO (a random nonce) and nothing else.
TEST(StoreRobustness, AnImpostorListenerLearnsNothingFromAClient) {
  uint16_t port = 0;
  const int listener = loopback_listener(port);
  ASSERT_GE(listener, 0);
  const std::string token = "the-jobs-secret-token-0123456789";
  Bytes heard;
  std::thread impostor([&] {
    const int fd = ::accept(listener, nullptr, nullptr);
    // Answers HELLO the way a store would, with a made-up nonce and proof.
    uint8_t buf[4096];
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n > 0) heard.insert(heard.end(), buf, buf + n);
    Bytes reply;
    wire::encode_ok_hello(reply, Bytes(kAuthNonceBytes, 1), Bytes(32, 2));
    ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, 1000) > 0 && (n = ::recv(fd, buf, sizeof(buf), 0)) > 0) heard.insert(heard.end(), buf, buf + n);
    ::close(fd);
  });
  try {
    StoreClient::connect("127.0.0.1", port, 3s, token);
    ADD_FAILURE() << "the client accepted a listener that does not know the token";
  } catch (const StoreError& e) {
    EXPECT_EQ(e.code(), StoreError::Code::Rejected) << e.what();
    EXPECT_NE(std::string(e.what()).find("did not prove that it knows this job's token"), std::string::npos) << e.what();
  }
  impostor.join();
  ::close(listener);
  const std::string text(heard.begin(), heard.end());
  EXPECT_EQ(text.find(token), std::string::npos) << "the token crossed the wire";
  auto first = wire::parse_request(heard, 1 << 20);
  ASSERT_TRUE(std::holds_alternative<wire::Parsed<wire::Request>>(first));
  const auto& hello = std::get<wire::Parsed<wire::Request>>(first);
  EXPECT_TRUE(std::holds_alternative<wire::HelloRequest>(hello.message));
  EXPECT_EQ(hello.consumed, heard.size()) << "the client sent more than HELLO to a listener it could not trust";
}

// The proofs: HMAC-SHA256 as RFC 4231 defines it, and distinct for the two roles.
TEST(StoreRobustness, AuthenticationProofsAreHmacSha256AndRoleBound) {
  const Sha256Digest mac = hmac_sha256("Jefe", "what do ya want for nothing?");  // RFC 4231 case 2
  std::string hex;
  for (uint8_t b : mac) hex += fmt::format("{:02x}", b);
  EXPECT_EQ(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  const Bytes a(kAuthNonceBytes, 3), b(kAuthNonceBytes, 4);
  EXPECT_NE(auth_proof("t", AuthRole::Server, a, b), auth_proof("t", AuthRole::Client, a, b));
  EXPECT_NE(auth_proof("t", AuthRole::Server, a, b), auth_proof("u", AuthRole::Server, a, b));
  EXPECT_NE(auth_proof("t", AuthRole::Server, a, b), auth_proof("t", AuthRole::Server, b, a));
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
  ASSERT_TRUE(future.send_request(wire::HelloRequest{wire::kProtocolVersion + 1, Bytes(kAuthNonceBytes, 0)}));
  Bytes reply = future.read_reply(2s);
  ASSERT_FALSE(reply.empty());
  EXPECT_EQ(reply[wire::kFrameHeaderBytes], uint8_t(wire::Status::Rejected));
  EXPECT_TRUE(future.closed_by_peer(2s));
}

}  // namespace
}  // namespace commbench
