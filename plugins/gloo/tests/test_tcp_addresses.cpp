// gloo's real TCP addresses, cleaned as the full-mesh connect sends them: the socket address and
// sequence number survive, the stack bytes past them are zeroed, and a rank's list packs to a
// few bytes per peer.
#include <gtest/gtest.h>

#include <netinet/in.h>

#include <cstring>
#include <vector>

#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>

#include "address_table.h"
#include "full_mesh.h"

namespace commbench::gloo_backend {
namespace {

using gloo::transport::tcp::Address;

TEST(GlooTcpAddresses, CleaningKeepsTheSocketAddressAndSequenceAndZeroesTheRest) {
  gloo::transport::tcp::attr attr("127.0.0.1");
  auto device = gloo::transport::tcp::CreateDevice(attr);
  constexpr int kPeers = 32;
  auto context = device->createContext(0, kPeers + 1);
  std::vector<std::vector<char>> cleaned(kPeers + 1);
  size_t raw_bytes = 0;
  for (int peer = 1; peer <= kPeers; ++peer) {
    const std::vector<char> raw = context->createPair(peer)->address().bytes();
    raw_bytes += raw.size();
    cleaned[peer] = clean_tcp_address(raw);
    ASSERT_EQ(cleaned[peer].size(), raw.size());
    const Address before(raw), after(cleaned[peer]);
    ASSERT_EQ(after.getSockaddr().ss_family, AF_INET);
    EXPECT_EQ(std::memcmp(&before.getSockaddr(), &after.getSockaddr(), sizeof(sockaddr_in)), 0) << "peer " << peer;
    EXPECT_EQ(before.getSeq(), after.getSeq());
    const auto* storage = reinterpret_cast<const unsigned char*>(&after.getSockaddr());
    for (size_t i = sizeof(sockaddr_in); i < sizeof(sockaddr_storage); ++i)
      ASSERT_EQ(storage[i], 0) << "byte " << i << " of peer " << peer << "'s socket address";
  }
  // Only the port (or the sequence number) differs between a rank's addresses.
  const std::vector<char> packed = pack_addresses(cleaned);
  EXPECT_LT(packed.size(), 160 + kPeers * 12u) << raw_bytes << " bytes unpacked";
  for (int peer = 1; peer <= kPeers; ++peer) EXPECT_EQ(unpack_address(packed, peer, 0), cleaned[peer]);
}

}  // namespace
}  // namespace commbench::gloo_backend
