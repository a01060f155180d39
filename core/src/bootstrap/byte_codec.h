// Little-endian field encoding for the store's wire protocol (docs/bootstrap.md).
// ByteReader never reads past its span: every accessor returns false instead, so a parser built
// on it cannot be driven out of bounds by a hostile length field.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace commbench::wire {

class ByteWriter {
 public:
  explicit ByteWriter(std::vector<uint8_t>& out) : out_(out) {}

  void u8(uint8_t v) { out_.push_back(v); }
  void u32(uint32_t v) { put_le(v); }
  void u64(uint64_t v) { put_le(v); }
  void i64(int64_t v) { put_le(static_cast<uint64_t>(v)); }
  void raw(const void* data, size_t n) {
    const auto* p = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), p, p + n);
  }
  // u32 length, then the bytes. Callers keep fields under 4 GiB (the frame limit is lower).
  void blob(const void* data, size_t n) {
    u32(static_cast<uint32_t>(n));
    raw(data, n);
  }
  void str(std::string_view s) { blob(s.data(), s.size()); }

 private:
  template <typename T>
  void put_le(T v) {
    for (size_t i = 0; i < sizeof(T); ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t>& out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> in) : in_(in) {}

  size_t remaining() const { return in_.size() - pos_; }
  bool at_end() const { return pos_ == in_.size(); }

  bool u8(uint8_t& v) { return get_le(v); }
  bool u32(uint32_t& v) { return get_le(v); }
  bool u64(uint64_t& v) { return get_le(v); }
  bool i64(int64_t& v) {
    uint64_t u = 0;
    if (!get_le(u)) return false;
    v = static_cast<int64_t>(u);
    return true;
  }
  // The next n bytes, viewed in place.
  bool view(size_t n, std::span<const uint8_t>& v) {
    if (n > remaining()) return false;
    v = in_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  // A u32-length-prefixed field, viewed in place (no copy, no allocation before the check).
  bool blob(std::span<const uint8_t>& v) {
    uint32_t n = 0;
    if (!u32(n) || n > remaining()) return false;
    v = in_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  bool str(std::string& s) {
    std::span<const uint8_t> v;
    if (!blob(v)) return false;
    s.assign(reinterpret_cast<const char*>(v.data()), v.size());
    return true;
  }
  bool bytes(std::vector<uint8_t>& b) {
    std::span<const uint8_t> v;
    if (!blob(v)) return false;
    b.assign(v.begin(), v.end());
    return true;
  }

 private:
  template <typename T>
  bool get_le(T& v) {
    if (remaining() < sizeof(T)) return false;
    T out = 0;
    for (size_t i = 0; i < sizeof(T); ++i) out |= static_cast<T>(in_[pos_ + i]) << (8 * i);
    pos_ += sizeof(T);
    v = out;
    return true;
  }
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
};

}  // namespace commbench::wire
