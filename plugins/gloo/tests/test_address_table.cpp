// The packed address lists of the full-mesh connect: every slot comes back byte for byte,
// whatever the addresses look like, the packing is small for addresses that differ in a few
// bytes, and a damaged list is refused with its owner named instead of read past its end.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "address_table.h"
#include "errors.h"

namespace commbench::gloo_backend {
namespace {

using Addresses = std::vector<std::vector<char>>;

void expect_round_trip(const Addresses& addresses) {
  const std::vector<char> packed = pack_addresses(addresses);
  for (size_t slot = 0; slot < addresses.size(); ++slot)
    EXPECT_EQ(unpack_address(packed, static_cast<int>(slot), 7), addresses[slot]) << "slot " << slot;
}

// What a TCP transport's addresses look like: one 136-byte layout, a port or a sequence
// number differing from pair to pair.
Addresses tcp_like(int world, int self) {
  Addresses out(static_cast<size_t>(world));
  for (int peer = 0; peer < world; ++peer) {
    if (peer == self) continue;
    std::vector<char> a(136, 0);
    a[0] = 2;                                  // AF_INET
    a[2] = static_cast<char>((40000 + peer) >> 8), a[3] = static_cast<char>((40000 + peer) & 0xff);
    a[4] = 127, a[7] = 1;                      // 127.0.0.1
    a[128] = static_cast<char>(peer * 3);      // a sequence number
    a[129] = static_cast<char>((peer * 3) >> 8);
    out[static_cast<size_t>(peer)] = a;
  }
  return out;
}

TEST(GlooAddressTable, EverySlotComesBackWhole) {
  expect_round_trip(tcp_like(9, 0));
  expect_round_trip(tcp_like(9, 4));
  expect_round_trip(tcp_like(9, 8));
  expect_round_trip(tcp_like(1, 0));  // one rank: one empty slot
  expect_round_trip({{'a', 'b', 'c'}});
}

TEST(GlooAddressTable, AddressesOfAnyLengthAndContent) {
  std::mt19937 random(12345);
  for (int trial = 0; trial < 200; ++trial) {
    Addresses addresses(1 + random() % 12);
    for (auto& a : addresses) {
      a.resize(random() % 40);  // shorter and longer than the base, and empty
      // Few distinct bytes: runs of equal and differing bytes of every length.
      for (char& c : a) c = static_cast<char>(random() % 3 == 0 ? random() % 256 : 0);
    }
    expect_round_trip(addresses);
  }
}

TEST(GlooAddressTable, AddressesThatDifferInAFewBytesPackSmall) {
  const Addresses addresses = tcp_like(1024, 5);
  const size_t raw = 1023 * 136;
  const std::vector<char> packed = pack_addresses(addresses);
  // The base once, then per address its length, its runs and a few changed bytes.
  EXPECT_LT(packed.size(), 136 + 1024 * 12u) << "raw " << raw;
  std::printf("1023 addresses of 136 bytes: %zu bytes packed, %zu raw\n", packed.size(), raw);
  expect_round_trip(addresses);
}

TEST(GlooAddressTable, ADamagedListIsRefusedNamingItsOwner) {
  const std::vector<char> packed = pack_addresses(tcp_like(6, 2));
  auto refused = [](std::span<const char> list, int slot) {
    try {
      unpack_address(list, slot, 3);
    } catch (const PluginError& e) {
      EXPECT_EQ(e.code(), CB_ERR_INTERNAL);
      EXPECT_NE(std::string(e.what()).find("rank 3"), std::string::npos) << e.what();
      return true;
    }
    return false;
  };
  // Cut anywhere: the last slot cannot be read whole.
  for (size_t cut = 0; cut < packed.size(); ++cut)
    EXPECT_TRUE(refused(std::span<const char>(packed.data(), cut), 5)) << "cut at " << cut;
  EXPECT_TRUE(refused(packed, 6));   // no such slot
  EXPECT_TRUE(refused(packed, -1));
  // One slot, a 2-byte base "xy", then slot 0: length 2 and one run that reaches past its end,
  // by its length (5 bytes) or by its gap (3 bytes in).
  ASSERT_EQ(pack_addresses({{'x', 'y'}}), (std::vector<char>{1, 2, 'x', 'y', 2, 0}));
  EXPECT_TRUE(refused(std::vector<char>{1, 2, 'x', 'y', 2, 1, 0, 5, 'a', 'b', 'c', 'd', 'e'}, 0));
  EXPECT_TRUE(refused(std::vector<char>{1, 2, 'x', 'y', 2, 1, 3, 1, 'a'}, 0));
  EXPECT_EQ(unpack_address(std::vector<char>{1, 2, 'x', 'y', 2, 1, 1, 1, 'a'}, 0, 3), (std::vector<char>{'x', 'a'}));
  // A length no address has.
  const std::vector<char> huge = {1, 0, static_cast<char>(0xff), static_cast<char>(0xff), 0x7f, 0};
  EXPECT_TRUE(refused(huge, 0));
}

}  // namespace
}  // namespace commbench::gloo_backend
