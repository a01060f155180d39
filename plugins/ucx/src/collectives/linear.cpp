// Gather and scatter straight between the root and every other rank, all transfers in flight
// at once: the root's link carries all the data whichever tree is used, and one round is the
// lowest latency.
#include "algorithms.h"

namespace commbench::ucx_backend::algorithms {

void linear_gather(Channel& ch, const CollectiveArgs& a) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  if (r != a.root) {
    ch.post_send(a.root, 0, a.sendbuf, block);
  } else {
    copy_if_distinct(at(a.recvbuf, static_cast<size_t>(r) * a.count, es), a.sendbuf, block);
    for (int j = 0; j < n; ++j)
      if (j != r) ch.post_recv(j, 0, at(a.recvbuf, static_cast<size_t>(j) * a.count, es), block);
  }
  ch.wait_all();
}

void linear_scatter(Channel& ch, const CollectiveArgs& a) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  if (r != a.root) {
    ch.post_recv(a.root, 0, a.recvbuf, block);
  } else {
    for (int j = 0; j < n; ++j)
      if (j != r) ch.post_send(j, 0, at(a.sendbuf, static_cast<size_t>(j) * a.count, es), block);
    copy_if_distinct(a.recvbuf, at(a.sendbuf, static_cast<size_t>(r) * a.count, es), block);
  }
  ch.wait_all();
}

}  // namespace commbench::ucx_backend::algorithms
