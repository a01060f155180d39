// Block arithmetic and byte helpers shared by the algorithms. Internal to the collectives.
#pragma once

#include <cstddef>
#include <cstring>

namespace commbench::ucx_backend::detail {

// A run of elements of a buffer.
struct Block {
  size_t offset;  // elements
  size_t length;  // elements
};

// Block i of `count` elements split over n ranks as evenly as possible: the first count % n
// blocks are one element longer, so blocks are empty only when count < n.
inline Block even_block(size_t count, int n, int i) {
  const size_t un = static_cast<size_t>(n), ui = static_cast<size_t>(i);
  const size_t base = count / un, extra = count % un;
  return {ui * base + (ui < extra ? ui : extra), base + (ui < extra ? 1 : 0)};
}

// Block i of a buffer made of n blocks of `count` elements each (allgather, reducescatter, ...).
inline Block fixed_block(size_t count, int i) { return {static_cast<size_t>(i) * count, count}; }

// a mod n in [0, n) also for negative a: ranks relative to a root or a ring position.
inline int wrap(int a, int n) { return ((a % n) + n) % n; }

inline char* at(void* p, size_t elements, size_t esize) {
  return static_cast<char*>(p) + elements * esize;
}
inline const char* at(const void* p, size_t elements, size_t esize) {
  return static_cast<const char*>(p) + elements * esize;
}

// Copies unless the bytes are already there (in place); never calls memcpy with 0 bytes, where
// the pointers may be null.
inline void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
}

}  // namespace commbench::ucx_backend::detail
