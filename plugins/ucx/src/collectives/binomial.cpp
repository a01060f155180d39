// The tree (MPICH's): relative rank v's parent is v with its lowest set bit cleared; its
// children are v + 2^k for every 2^k below that bit.
#include "binomial.h"

#include "blocks.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"

namespace commbench::ucx_backend {

using detail::wrap;

void binomial_broadcast(Channel& ch, const CollectiveArgs& a) {
  const int n = ch.size(), r = ch.rank();
  const size_t bytes = a.count * sdk::dtype_size(a.dtype);
  const int v = wrap(r - a.root, n);
  if (r == a.root) detail::copy_bytes(a.recvbuf, a.sendbuf, bytes);
  // Every pair of ranks exchanges one message, so step 0 is enough.
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if (v & mask) {
      ch.post_recv(wrap(v - mask + a.root, n), 0, a.recvbuf, bytes);
      ch.wait_all();
      break;
    }
  }
  // Largest subtree first: it has the most forwarding left to do.
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (v + mask < n) ch.post_send(wrap(v + mask + a.root, n), 0, a.recvbuf, bytes);
  ch.wait_all();
}

void binomial_reduce(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t bytes = a.count * sdk::dtype_size(a.dtype);
  const int v = wrap(r - a.root, n);
  // Accumulate in the result buffer at the root, in scratch elsewhere: sendbuf stays intact
  // and a non-root's recvbuf is not the caller's to write.
  void* acc = r == a.root ? a.recvbuf : s.b.get(bytes);
  detail::copy_bytes(acc, a.sendbuf, bytes);
  void* child_data = s.a.get(bytes);
  for (int mask = 1; mask < n; mask <<= 1) {
    if (v & mask) {
      ch.post_send(wrap(v - mask + a.root, n), 0, acc, bytes);
      ch.wait_all();
      return;  // a non-root is done once its subtree's sum is with the parent
    }
    if (v + mask >= n) continue;
    ch.post_recv(wrap(v + mask + a.root, n), 0, child_data, bytes);
    ch.wait_all();
    // acc holds relative ranks v..v+mask-1, the child v+mask..: lower ranks stay first.
    sdk::reduce(a.dtype, a.redop, acc, acc, child_data, a.count);
  }
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, acc, a.count, n);  // root only
}

}  // namespace commbench::ucx_backend
