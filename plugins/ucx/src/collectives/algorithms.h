// The algorithms behind run_collective(), one family per source file, and the block arithmetic
// they share. Internal to the collectives library.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "collectives.h"
#include "commbench/sdk/dtypes.hpp"

namespace commbench::ucx_backend::algorithms {

// Block i of `count` elements split over n ranks as evenly as possible (the first count % n
// blocks one element longer).
struct Block {
  size_t offset;  // elements
  size_t length;  // elements
};
inline Block block_of(size_t count, int n, int i) {
  const size_t base = count / static_cast<size_t>(n), extra = count % static_cast<size_t>(n);
  const size_t u = static_cast<size_t>(i);
  return {u * base + (u < extra ? u : extra), base + (u < extra ? 1 : 0)};
}

inline int mod(int a, int n) { return ((a % n) + n) % n; }

inline char* at(void* p, size_t elements, size_t esize) { return static_cast<char*>(p) + elements * esize; }
inline const char* at(const void* p, size_t elements, size_t esize) {
  return static_cast<const char*>(p) + elements * esize;
}
inline void copy_if_distinct(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
}

// ring.cpp
void ring_allreduce(Channel& ch, const CollectiveArgs& a, Scratch& s);
void ring_allgather(Channel& ch, const CollectiveArgs& a);
void ring_reducescatter(Channel& ch, const CollectiveArgs& a, Scratch& s);
// recursive_doubling.cpp
void recursive_doubling_allreduce(Channel& ch, const CollectiveArgs& a, Scratch& s);
void recursive_doubling_allgather(Channel& ch, const CollectiveArgs& a);  // power-of-two worlds
// pairwise.cpp
void pairwise_reducescatter(Channel& ch, const CollectiveArgs& a, Scratch& s);
void pairwise_alltoall(Channel& ch, const CollectiveArgs& a, Scratch& s);
// binomial.cpp
void binomial_broadcast(Channel& ch, const CollectiveArgs& a);
void binomial_reduce(Channel& ch, const CollectiveArgs& a, Scratch& s);
// linear.cpp
void linear_gather(Channel& ch, const CollectiveArgs& a);
void linear_scatter(Channel& ch, const CollectiveArgs& a);
// dissemination.cpp
void dissemination_barrier(Channel& ch);

}  // namespace commbench::ucx_backend::algorithms
