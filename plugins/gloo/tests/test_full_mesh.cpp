// The full-mesh connect against real gloo TCP pairs: addresses are cleaned as they are sent (the
// socket address and sequence number survive, the stack bytes past them are zeroed) and pack to
// a few bytes per peer; a peer whose address refuses connections ends the connect within the
// pairs' timeout, and one whose address has the wrong size is refused by name.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>

#include "address_table.h"
#include "errors.h"
#include "fake_bootstrap.h"
#include "full_mesh.h"
#include "tcp_address.h"

namespace commbench::gloo_backend {
namespace {

using gloo::transport::tcp::Address;
using test::FakeBootstrap;

std::shared_ptr<gloo::transport::Device> loopback_device() {
  gloo::transport::tcp::attr attr("127.0.0.1");
  return gloo::transport::tcp::CreateDevice(attr);
}

void expect_clean(const std::vector<char>& raw, const std::vector<char>& cleaned) {
  ASSERT_EQ(cleaned.size(), raw.size());
  const Address before(raw), after(cleaned);
  ASSERT_EQ(after.getSockaddr().ss_family, AF_INET);
  EXPECT_EQ(std::memcmp(&before.getSockaddr(), &after.getSockaddr(), sizeof(sockaddr_in)), 0);
  EXPECT_EQ(before.getSeq(), after.getSeq());
  const auto* storage = reinterpret_cast<const unsigned char*>(&after.getSockaddr());
  for (size_t i = sizeof(sockaddr_in); i < sizeof(sockaddr_storage); ++i)
    ASSERT_EQ(storage[i], 0) << "byte " << i << " of the socket address";
}

TEST(GlooFullMesh, CleaningKeepsTheSocketAddressAndSequenceAndZeroesTheRest) {
  // A made-up address with every byte past the socket address set: the test does not depend on
  // what libgloo's stack happens to hold.
  sockaddr_storage dirty;
  std::memset(&dirty, 0xaa, sizeof(dirty));
  auto* in = reinterpret_cast<sockaddr_in*>(&dirty);
  in->sin_family = AF_INET;
  in->sin_port = htons(4242);
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::memset(in->sin_zero, 0, sizeof(in->sin_zero));
  const std::vector<char> made_up = Address(dirty, 17).bytes();
  expect_clean(made_up, clean_tcp_address(made_up));

  auto context = loopback_device()->createContext(0, 33);
  std::vector<std::vector<char>> cleaned(33);
  for (int peer = 1; peer <= 32; ++peer) {
    const std::vector<char> raw = context->createPair(peer)->address().bytes();
    cleaned[static_cast<size_t>(peer)] = clean_tcp_address(raw);
    expect_clean(raw, cleaned[static_cast<size_t>(peer)]);
  }
  // Only the port (or the sequence number) differs between a rank's addresses.
  const std::vector<char> packed = pack_addresses(cleaned);
  EXPECT_LT(packed.size(), 160 + 32 * 12u);
  for (int peer = 1; peer <= 32; ++peer) EXPECT_EQ(unpack_address(packed, peer, 0), cleaned[static_cast<size_t>(peer)]);
}

// A port on loopback that is bound, so nobody else takes it, and refuses connections.
class DeadPort {
 public:
  DeadPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(a);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &length) != 0)
      throw std::runtime_error("no loopback port to bind");
    address_ = a;
  }
  ~DeadPort() { ::close(fd_); }
  std::vector<char> gloo_address() const {
    sockaddr_storage ss{};
    std::memcpy(&ss, &address_, sizeof(address_));
    return Address(ss, -1).bytes();
  }

 private:
  int fd_;
  sockaddr_in address_{};
};

// World 2: the real rank `rank`, its peer scripted to publish `peer_address` for it.
FakeBootstrap::Script peer_publishing(int rank, std::vector<char> peer_address) {
  std::vector<std::vector<char>> slots(2);
  slots[static_cast<size_t>(rank)] = std::move(peer_address);
  auto list = std::make_shared<std::vector<char>>(pack_addresses(slots));
  return [list](int call, int, size_t bytes, char* slot) {
    std::memset(slot, 0, bytes);
    if (call == 0) {
      const uint64_t length = list->size();
      std::memcpy(slot, &length, sizeof(length));
    } else {
      std::memcpy(slot, list->data(), std::min(bytes, list->size()));
    }
    return true;
  };
}

// Were the pairs created before the transport context had its timeout, they would wait gloo's
// default or an uninitialised one.
TEST(GlooFullMesh, APeerWhoseAddressLeadsNowhereEndsTheConnectWithinThePairsTimeout) {
  const DeadPort dead;
  for (int rank : {0, 1}) {
    FakeBootstrap host(2, peer_publishing(rank, dead.gloo_address()));
    const auto start = std::chrono::steady_clock::now();
    try {
      connect_full_mesh(host.services(rank), loopback_device(), std::chrono::milliseconds(1000), 60000);
      ADD_FAILURE() << "rank " << rank << " connected to a port that refuses connections";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("onnect"), std::string::npos) << e.what();
    }
    // gloo retries a refused first connect for 5 times the pair's timeout: 5 s here.
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 20.0) << "rank " << rank << ": the pairs did not get the 1 s timeout";
  }
}

TEST(GlooFullMesh, AnAddressOfAnotherSizeIsRefusedNamingItsOwner) {
  FakeBootstrap host(2, peer_publishing(0, std::vector<char>(20, 'x')));
  try {
    connect_full_mesh(host.services(0), loopback_device(), std::chrono::milliseconds(1000), 5000);
    FAIL() << "accepted";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_INTERNAL);
    EXPECT_NE(std::string(e.what()).find("rank 1 published a Gloo address of 20 bytes for rank 0"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace commbench::gloo_backend
