// Pairwise exchange: every rank talks to every other rank directly. alltoall goes in n-1 steps
// (step i: to rank+i, from rank-i) so that each step is a permutation and no rank is flooded;
// reducescatter posts all n-1 exchanges at once, which is what small messages want.
#include "algorithms.h"

namespace commbench::ucx_backend::algorithms {

void pairwise_reducescatter(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  // Slot j holds rank j's contribution to block r (own one copied: recvbuf may alias it).
  char* slots = static_cast<char*>(s.a.get(block * static_cast<size_t>(n)));
  std::memcpy(slots + static_cast<size_t>(r) * block, at(a.sendbuf, static_cast<size_t>(r) * a.count, es), block);
  for (int i = 1; i < n; ++i) {
    const int to = mod(r + i, n), from = mod(r - i, n);
    ch.post_send(to, 0, at(a.sendbuf, static_cast<size_t>(to) * a.count, es), block);
    ch.post_recv(from, 0, slots + static_cast<size_t>(from) * block, block);
  }
  ch.wait_all();
  // Reduced in rank order on every rank: the result does not depend on who computes it.
  std::memcpy(a.recvbuf, slots, block);
  for (int j = 1; j < n; ++j)
    sdk::reduce(a.dtype, a.redop, a.recvbuf, a.recvbuf, slots + static_cast<size_t>(j) * block, a.count);
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, a.recvbuf, a.count, n);
}

void pairwise_alltoall(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  const void* send = a.sendbuf;
  if (a.sendbuf == a.recvbuf) {
    // In place: blocks would be overwritten before they are sent.
    void* copy = s.a.get(block * static_cast<size_t>(n));
    std::memcpy(copy, a.sendbuf, block * static_cast<size_t>(n));
    send = copy;
  }
  std::memmove(at(a.recvbuf, static_cast<size_t>(r) * a.count, es), at(send, static_cast<size_t>(r) * a.count, es), block);
  for (int i = 1; i < n; ++i) {
    const int to = mod(r + i, n), from = mod(r - i, n);
    ch.post_send(to, static_cast<uint32_t>(i), at(send, static_cast<size_t>(to) * a.count, es), block);
    ch.post_recv(from, static_cast<uint32_t>(i), at(a.recvbuf, static_cast<size_t>(from) * a.count, es), block);
    ch.wait_all();
  }
}

}  // namespace commbench::ucx_backend::algorithms
