// What a client that does not know the token can make the store hold (issue 28 §2), and what
// authenticated clients can make it buffer: a few KiB per connection before authentication, a
// capped number of such connections, each closed when it does not authenticate in time, a total
// for all unparsed input, and descriptors kept free for the agent's own workers.
#include <gtest/gtest.h>

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <thread>

#include "bootstrap/byte_codec.h"
#include "test_store_helpers.h"

namespace commbench {
namespace {

using namespace test;

std::unique_ptr<StoreServer> start_limited_server(StoreServerOptions o, CapturedLog* log = nullptr) {
  if (log) o.log = log->sink();
  return StoreServer::start(o);
}

void expect_limits_serving(const StoreServer& server, const std::string& token = "") {
  auto client = StoreClient::connect(server.host(), server.port(), 5s, token);
  client->set("alive", bytes_of("yes"));
  EXPECT_EQ(string_of(client->get("alive", 1s)), "yes");
}

// The header of a frame that announces `length` bytes, plus `body` of them.
Bytes frame_start(uint32_t length, size_t body) {
  Bytes out;
  wire::ByteWriter w(out);
  w.u32(length);
  w.u8(uint8_t(wire::Opcode::Set));
  out.resize(4 + body, 'x');
  return out;
}

TEST(StoreLimits, BeforeAuthenticationOnlyASmallMessageIsTaken) {
  CapturedLog log;
  auto server = start_limited_server(StoreServerOptions{}, &log);
  RawSocket attacker(server->port());
  ASSERT_TRUE(attacker.connected());
  // 63 MiB announced, 64 KiB sent, no HELLO: within the 64 MiB limit for authenticated clients,
  // but nobody who has not authenticated may make the store hold more than a few KiB.
  ASSERT_TRUE(attacker.send_bytes(frame_start(63u << 20, 64 << 10)));
  EXPECT_TRUE(attacker.closed_by_peer(2s)) << "the store kept reading an unauthenticated 63 MiB message";
  EXPECT_TRUE(log.contains("exceeds the limit of 4096 bytes"));
  expect_limits_serving(*server);
}

TEST(StoreLimits, AConnectionThatDoesNotAuthenticateInTimeIsClosed) {
  CapturedLog log;
  StoreServerOptions o;
  o.auth_timeout = 300ms;
  auto server = start_limited_server(o, &log);
  RawSocket idle(server->port());
  ASSERT_TRUE(idle.connected());
  EXPECT_TRUE(idle.closed_by_peer(3s)) << "an idle connection was kept past the authentication timeout";
  EXPECT_TRUE(log.contains("did not authenticate within 300 ms"));
  expect_limits_serving(*server);
}

TEST(StoreLimits, AtMostTheCapOfUnauthenticatedConnectionsIsHeld) {
  StoreServerOptions o;
  o.max_unauthenticated = 4;
  auto server = start_limited_server(o);
  std::vector<std::unique_ptr<RawSocket>> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(std::make_unique<RawSocket>(server->port()));
  std::this_thread::sleep_for(1200ms);  // older than the eviction grace (1 s)
  for (int i = 0; i < 6; ++i) idle.push_back(std::make_unique<RawSocket>(server->port()));
  // A real client still gets in: it authenticates at once, and older idle ones make room.
  expect_limits_serving(*server);
  int closed = 0;
  for (auto& s : idle) closed += s->closed_by_peer(100ms);
  EXPECT_GE(closed, 4) << "10 idle connections, a cap of 4: the oldest must have been closed";
}

TEST(StoreLimits, AllUnparsedInputTogetherIsBoundedAndEveryMessageStillCompletes) {
  StoreServerOptions o;
  o.max_message_bytes = 4u << 20;
  o.max_buffered_bytes = 1u << 20;
  auto server = start_limited_server(o);
  constexpr int kClients = 4;
  constexpr uint32_t kMessage = 3u << 20;
  std::vector<std::unique_ptr<RawSocket>> senders;
  for (int i = 0; i < kClients; ++i) {
    senders.push_back(std::make_unique<RawSocket>(server->port()));
    ASSERT_TRUE(senders.back()->hello());
  }
  // Each sends all but the last bytes of a 3 MiB SET: 12 MiB in flight, of which the server may
  // buffer the total (1 MiB) plus one message at a time (4 MiB) and a read chunk.
  std::vector<Bytes> messages;
  for (int i = 0; i < kClients; ++i) {
    Bytes m;
    wire::encode_request(wire::SetRequest{"k" + std::to_string(i), Bytes(kMessage, uint8_t(i))}, m);
    messages.push_back(std::move(m));
  }
  std::vector<std::thread> writers;
  for (int i = 0; i < kClients; ++i)
    writers.emplace_back([&, i] {
      const Bytes& m = messages[static_cast<size_t>(i)];
      senders[static_cast<size_t>(i)]->send_bytes(Bytes(m.begin(), m.end() - 1));
    });
  std::this_thread::sleep_for(500ms);
  size_t most = 0;
  for (int t = 0; t < 10; ++t, std::this_thread::sleep_for(50ms)) most = std::max(most, server->buffered_input_bytes());
  EXPECT_LE(most, (1u << 20) + (4u << 20) + (64u << 10)) << "the server buffered past its total";
  for (int i = 0; i < kClients; ++i) senders[static_cast<size_t>(i)]->send_bytes(Bytes{messages[static_cast<size_t>(i)].back()});
  for (auto& w : writers) w.join();
  for (auto& s : senders) {
    Bytes reply = s->read_reply(10s);
    ASSERT_FALSE(reply.empty()) << "a message never completed: the limit must not deadlock";
    EXPECT_EQ(reply[wire::kFrameHeaderBytes], uint8_t(wire::Status::Ok));
  }
  for (int t = 0; t < 100 && server->buffered_input_bytes() != 0; ++t) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server->buffered_input_bytes(), 0u);
}

int open_descriptors() {
  int n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (d && ::readdir(d)) ++n;
  if (d) ::closedir(d);
  return n - 3;  // ".", "..", and the directory's own descriptor
}

// Another process (its own descriptor table) that opens `count` connections to `port` and
// holds them until killed.
pid_t hold_connections(uint16_t port, int count) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int i = 0; i < count; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_port = htons(port);
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    }
    ::pause();
    ::_exit(0);
  }
  return pid;
}

// 1,100 idle connections against `ulimit -n 1024` once left the agent no descriptor for its
// workers' pipes. The store stops accepting short of the limit: the reserve stays the process's.
TEST(StoreLimits, DescriptorsAreKeptFreeForTheProcessItself) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int in_use = open_descriptors();
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(in_use + 48);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  StoreServerOptions o;
  o.reserved_fds = 24;
  o.auth_timeout = 60s;  // the idle connections stay for the whole test
  CapturedLog log;
  auto server = start_limited_server(o, &log);
  const pid_t holder = hold_connections(server->port(), 80);
  std::this_thread::sleep_for(500ms);
  // The process itself can still open what the reserve is for (10 pipes: 20 descriptors).
  int opened = 0;
  std::vector<int> fds;
  for (int i = 0; i < 10; ++i) {
    int p[2];
    if (::pipe(p) != 0) break;
    fds.insert(fds.end(), {p[0], p[1]});
    ++opened;
  }
  for (int fd : fds) ::close(fd);
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);
  server.reset();
  ::setrlimit(RLIMIT_NOFILE, &saved);
  EXPECT_EQ(opened, 10) << "the store took the descriptors its process needs";
  EXPECT_TRUE(log.contains("descriptors kept free")) << "the store never held back";
}

}  // namespace
}  // namespace commbench

namespace commbench {
namespace {

using namespace test;

// At a large job's start a busy store may close a client that has not authenticated yet (the
// eviction above): the client connects again until its deadline instead of failing the rank.
// Here the first listener on the port closes the first connection during HELLO; the store then
// starts on the same port.
TEST(StoreLimits, AClientClosedBeforeItAuthenticatedConnectsAgain) {
  uint16_t port = 0;
  const int listener = loopback_listener(port);
  ASSERT_GE(listener, 0);
  std::unique_ptr<StoreServer> server;
  std::thread evictor([&] {
    const int first = ::accept(listener, nullptr, nullptr);
    char hello[64];
    (void)::recv(first, hello, sizeof(hello), 0);  // the client's HELLO, left unanswered
    ::close(first);
    ::close(listener);
    StoreServerOptions o;
    o.port = port;
    o.token = "t";
    server = StoreServer::start(o);
  });
  std::unique_ptr<StoreClient> client;
  EXPECT_NO_THROW(client = StoreClient::connect("127.0.0.1", port, 10s, "t"));
  evictor.join();
  ASSERT_TRUE(client);
  client->set("k", bytes_of("v"));
  EXPECT_EQ(string_of(client->get("k", 1s)), "v");
}

TEST(StoreLimits, AWrongTokenIsStillRefusedAtOnce) {
  auto server = start_server(nullptr, "right");
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(StoreClient::connect(server->host(), server->port(), 10s, "wrong"), StoreError);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "a rejection is final: no retry until the deadline";
}

}  // namespace
}  // namespace commbench
