// Recursive doubling: log2(n) rounds of whole-buffer exchanges with rank ^ 2^k. Latency-optimal
// for small messages; every rank sends log2(n) times the buffer.
#include "algorithms.h"

namespace commbench::ucx_backend::algorithms {

void recursive_doubling_allreduce(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), bytes = a.count * es;
  copy_if_distinct(a.recvbuf, a.sendbuf, bytes);
  char* tmp = static_cast<char*>(s.a.get(bytes));
  int pof2 = 1;
  while (pof2 * 2 <= n) pof2 *= 2;
  const int rem = n - pof2;
  // Fold: among the first 2*rem ranks, even ones hand their data to the odd neighbour and sit
  // out; the rest renumber 0..pof2-1.
  int vrank;
  if (r < 2 * rem) {
    if (r % 2 == 0) {
      ch.post_send(r + 1, 0, a.recvbuf, bytes);
      ch.wait_all();
      vrank = -1;
    } else {
      ch.post_recv(r - 1, 0, tmp, bytes);
      ch.wait_all();
      sdk::reduce(a.dtype, a.redop, a.recvbuf, tmp, a.recvbuf, a.count);  // lower rank first
      vrank = r / 2;
    }
  } else {
    vrank = r - rem;
  }
  if (vrank >= 0) {
    uint32_t step = 1;
    for (int mask = 1; mask < pof2; mask <<= 1, ++step) {
      const int vpeer = vrank ^ mask;
      const int peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
      ch.post_send(peer, step, a.recvbuf, bytes);
      ch.post_recv(peer, step, tmp, bytes);
      ch.wait_all();
      // The same operand order on both sides, so both hold bit-identical results.
      if (peer < r) sdk::reduce(a.dtype, a.redop, a.recvbuf, tmp, a.recvbuf, a.count);
      else sdk::reduce(a.dtype, a.redop, a.recvbuf, a.recvbuf, tmp, a.count);
    }
    if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, a.recvbuf, a.count, n);
  }
  // Unfold: the ranks that sat out get the result.
  if (r < 2 * rem) {
    if (r % 2 == 1) ch.post_send(r - 1, 100, a.recvbuf, bytes);
    else ch.post_recv(r + 1, 100, a.recvbuf, bytes);
    ch.wait_all();
  }
}

void recursive_doubling_allgather(Channel& ch, const CollectiveArgs& a) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  copy_if_distinct(at(a.recvbuf, static_cast<size_t>(r) * a.count, es), a.sendbuf, block);
  // Before round k every rank holds the 2^k blocks of its aligned group; it swaps them with the
  // partner group's.
  uint32_t step = 0;
  for (int mask = 1; mask < n; mask <<= 1, ++step) {
    const int peer = r ^ mask;
    const size_t mine = static_cast<size_t>(r & ~(mask - 1)), theirs = static_cast<size_t>(peer & ~(mask - 1));
    ch.post_send(peer, step, at(a.recvbuf, mine * a.count, es), static_cast<size_t>(mask) * block);
    ch.post_recv(peer, step, at(a.recvbuf, theirs * a.count, es), static_cast<size_t>(mask) * block);
    ch.wait_all();
  }
}

}  // namespace commbench::ucx_backend::algorithms
