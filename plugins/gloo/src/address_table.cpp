// Layout, every number an unsigned LEB128 varint:
//   slots, base length, base bytes                 (base: the first non-empty address)
//   per slot: length, runs, per run: gap, run length, run bytes
// A run is a maximal stretch where the address differs from the base (read as zeros past its
// end); `gap` counts the equal bytes since the previous run ended.
#include "address_table.h"

#include <cstdint>
#include <string>

#include "errors.h"

namespace commbench::gloo_backend {
namespace {

// gloo's addresses are at most 192 bytes (transport/address.h); a bound before allocating.
constexpr uint64_t kMaxAddressBytes = 64 * 1024;

void put_varint(std::vector<char>& out, uint64_t v) {
  do {
    const auto low = static_cast<unsigned char>(v & 0x7f);
    v >>= 7;
    out.push_back(static_cast<char>(v != 0 ? (low | 0x80) : low));
  } while (v != 0);
}

unsigned char base_byte(const std::vector<char>& base, size_t i) {
  return i < base.size() ? static_cast<unsigned char>(base[i]) : 0;
}

class Reader {
 public:
  Reader(std::span<const char> in, int owner) : in_(in), owner_(owner) {}

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto b = static_cast<unsigned char>(take(1)[0]);
      if (shift == 63 && (b & 0x7e) != 0) malformed("a number beyond 64 bits");
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    malformed("a number of more than ten bytes");
  }

  std::span<const char> take(uint64_t n) {
    if (n > in_.size() - pos_) malformed("it ends early");
    const auto out = in_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return out;
  }

  [[noreturn]] void malformed(const std::string& why) const {
    fail(CB_ERR_INTERNAL, "the Gloo addresses rank " + std::to_string(owner_) +
                              " published in the bootstrap allgather are malformed (" + why +
                              "): its plugin is a different build than this rank's; use one build on every rank");
  }

 private:
  std::span<const char> in_;
  size_t pos_ = 0;
  int owner_;
};

}  // namespace

std::vector<char> pack_addresses(const std::vector<std::vector<char>>& addresses) {
  std::vector<char> base;
  for (const auto& a : addresses)
    if (!a.empty()) {
      base = a;
      break;
    }
  std::vector<char> out;
  out.reserve(16 + base.size() + addresses.size() * 8);
  put_varint(out, addresses.size());
  put_varint(out, base.size());
  out.insert(out.end(), base.begin(), base.end());
  std::vector<char> runs;
  for (const auto& a : addresses) {
    if (a.size() > kMaxAddressBytes)
      fail(CB_ERR_INTERNAL, "a Gloo pair address of " + std::to_string(a.size()) + " bytes: more than the " +
                                std::to_string(kMaxAddressBytes) + " the full-mesh connect can pass on; this libgloo "
                                "is not one the plugin was built for: rebuild the plugin against it");
    runs.clear();
    uint64_t count = 0;
    size_t previous_end = 0;
    for (size_t i = 0; i < a.size();) {
      if (static_cast<unsigned char>(a[i]) == base_byte(base, i)) {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < a.size() && static_cast<unsigned char>(a[end]) != base_byte(base, end)) ++end;
      put_varint(runs, i - previous_end);
      put_varint(runs, end - i);
      runs.insert(runs.end(), a.begin() + static_cast<std::ptrdiff_t>(i), a.begin() + static_cast<std::ptrdiff_t>(end));
      ++count;
      previous_end = i = end;
    }
    put_varint(out, a.size());
    put_varint(out, count);
    out.insert(out.end(), runs.begin(), runs.end());
  }
  return out;
}

std::vector<char> unpack_address(std::span<const char> packed, int slot, int owner) {
  Reader in(packed, owner);
  const uint64_t slots = in.varint();
  if (slot < 0 || static_cast<uint64_t>(slot) >= slots)
    in.malformed("it holds " + std::to_string(slots) + " addresses, and slot " + std::to_string(slot) + " is wanted");
  const auto base_bytes = in.take(in.varint());
  const std::vector<char> base(base_bytes.begin(), base_bytes.end());
  for (int s = 0;; ++s) {
    const uint64_t length = in.varint(), runs = in.varint();
    if (length > kMaxAddressBytes) in.malformed("an address of " + std::to_string(length) + " bytes");
    std::vector<char> address;
    if (s == slot) {
      address.resize(static_cast<size_t>(length));
      for (size_t i = 0; i < address.size(); ++i) address[i] = static_cast<char>(base_byte(base, i));
    }
    uint64_t at = 0;
    for (uint64_t r = 0; r < runs; ++r) {
      const uint64_t gap = in.varint();
      if (gap > length - at) in.malformed("a difference past the address's end");
      at += gap;
      const uint64_t n = in.varint();
      if (n > length - at) in.malformed("a difference past the address's end");
      const auto bytes = in.take(n);
      if (s == slot) std::copy(bytes.begin(), bytes.end(), address.begin() + static_cast<std::ptrdiff_t>(at));
      at += n;
    }
    if (s == slot) return address;
  }
}

}  // namespace commbench::gloo_backend
