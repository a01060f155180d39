#include "pairwise.h"

#include "blocks.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"

namespace commbench::ucx_backend {

using detail::at;
using detail::wrap;

void pairwise_reducescatter(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  // Slot j holds rank j's contribution to block r. The own one is read where it is, except in
  // place from rank 2 on: there recvbuf is that very block, and the reduction below (in rank
  // order) overwrites it before its turn. Ranks 0 and 1 read it in the first reduction, element
  // by element before writing. (The copy used to be unconditional: 2 ranks out of place, 64 KiB,
  // 1.09x recursive halving's time.)
  char* slots = static_cast<char*>(s.a.get(block * static_cast<size_t>(n)));
  auto slot = [&](int j) { return slots + static_cast<size_t>(j) * block; };
  const void* own = at(a.sendbuf, static_cast<size_t>(r) * a.count, es);
  if (a.recvbuf == own && r >= 2) {
    detail::copy_bytes(slot(r), own, block);
    own = slot(r);
  }
  auto contribution = [&](int j) -> const void* { return j == r ? own : slot(j); };
  for (int i = 1; i < n; ++i) {
    const int to = wrap(r + i, n), from = wrap(r - i, n);
    ch.post_send(to, 0, at(a.sendbuf, static_cast<size_t>(to) * a.count, es), block);
    ch.post_recv(from, 0, slot(from), block);
  }
  ch.wait_all();
  // Reduced in rank order 0..n-1 whatever order the messages came in: deterministic, and the
  // same order for every block.
  if (n == 1) {
    if (own != a.recvbuf) detail::copy_bytes(a.recvbuf, own, block);
  } else {
    sdk::reduce(a.dtype, a.redop, a.recvbuf, contribution(0), contribution(1), a.count);
  }
  for (int j = 2; j < n; ++j) sdk::reduce(a.dtype, a.redop, a.recvbuf, a.recvbuf, contribution(j), a.count);
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, a.recvbuf, a.count, n);
}

void pairwise_alltoall(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  const void* send = a.sendbuf;
  if (a.sendbuf == a.recvbuf) {
    // In place, a block received early would overwrite one not sent yet: send from a copy.
    void* copy = s.a.get(block * static_cast<size_t>(n));
    detail::copy_bytes(copy, a.sendbuf, block * static_cast<size_t>(n));
    send = copy;
  }
  detail::copy_bytes(at(a.recvbuf, static_cast<size_t>(r) * a.count, es),
                     at(send, static_cast<size_t>(r) * a.count, es), block);
  for (int i = 1; i < n; ++i) {
    const int to = wrap(r + i, n), from = wrap(r - i, n);
    const auto step = static_cast<uint32_t>(i);
    ch.post_send(to, step, at(send, static_cast<size_t>(to) * a.count, es), block);
    ch.post_recv(from, step, at(a.recvbuf, static_cast<size_t>(from) * a.count, es), block);
    ch.wait_all();
  }
}

}  // namespace commbench::ucx_backend
