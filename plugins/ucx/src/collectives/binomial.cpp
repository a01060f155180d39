// Binomial trees rooted at any rank (ranks renumbered relative to the root): ceil(log2 n)
// rounds; a rank receives once and then forwards to (broadcast), or accumulates from, the
// subtrees below it.
#include "algorithms.h"

namespace commbench::ucx_backend::algorithms {

void binomial_broadcast(Channel& ch, const CollectiveArgs& a) {
  const int n = ch.size(), r = ch.rank();
  const size_t bytes = a.count * sdk::dtype_size(a.dtype);
  const int vr = mod(r - a.root, n);
  if (r == a.root) copy_if_distinct(a.recvbuf, a.sendbuf, bytes);
  int mask = 1;
  while (mask < n) {
    if (vr & mask) {
      ch.post_recv(mod(vr - mask + a.root, n), 0, a.recvbuf, bytes);
      ch.wait_all();
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vr + mask < n) ch.post_send(mod(vr + mask + a.root, n), 0, a.recvbuf, bytes);
  ch.wait_all();
}

void binomial_reduce(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t bytes = a.count * sdk::dtype_size(a.dtype);
  const int vr = mod(r - a.root, n);
  // The accumulator is the result buffer at the root, scratch elsewhere (the input stays intact).
  void* acc = r == a.root ? a.recvbuf : s.b.get(bytes);
  copy_if_distinct(acc, a.sendbuf, bytes);
  void* tmp = s.a.get(bytes);
  for (int mask = 1; mask < n; mask <<= 1) {
    if ((vr & mask) == 0) {
      const int child = vr | mask;
      if (child >= n) continue;
      ch.post_recv(mod(child + a.root, n), 0, tmp, bytes);
      ch.wait_all();
      sdk::reduce(a.dtype, a.redop, acc, acc, tmp, a.count);  // lower relative rank first
    } else {
      ch.post_send(mod((vr & ~mask) + a.root, n), 0, acc, bytes);
      ch.wait_all();
      break;
    }
  }
  if (r == a.root && a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, acc, a.count, n);
}

}  // namespace commbench::ucx_backend::algorithms
