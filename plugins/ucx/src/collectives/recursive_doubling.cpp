#include "recursive_doubling.h"

#include <string>

#include "blocks.h"
#include "fold.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"
#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend {

void recursive_doubling_allreduce(Channel& ch, const CollectiveArgs& a, Scratch& s) {
  const int n = ch.size(), r = ch.rank();
  const size_t bytes = a.count * sdk::dtype_size(a.dtype);
  void* tmp = s.a.get(bytes);
  const detail::Fold f(n);
  int rounds = 0;
  for (int p = 1; p < f.pof2; p *= 2) ++rounds;
  const uint32_t fold_step = 0, unfold_step = static_cast<uint32_t>(rounds) + 1;
  // No copy of the input into the output first: the first exchange sends from sendbuf and the
  // first reduction writes recvbuf, so out of place reads the input once and in place is as before
  // (2 ranks out of place, 64 KiB: 35.6 -> 13.4 us over UCX's shared memory, docs/performance-ucx-mpi.md).
  const void* mine = a.sendbuf;  // this rank's current partial
  // Fold (fold.h): odd ranks among the first 2*rem hand their data to their even neighbour.
  if (f.sits_out(r)) {
    ch.post_send(r - 1, fold_step, a.sendbuf, bytes);
    ch.wait_all();  // in place the result lands where the input is sent from: not before
  } else {
    if (f.takes_partner(r)) {
      ch.post_recv(r + 1, fold_step, tmp, bytes);
      ch.wait_all();
      sdk::reduce(a.dtype, a.redop, a.recvbuf, mine, tmp, a.count);  // lower rank first
      mine = a.recvbuf;
    }
    const int vrank = f.vrank(r);
    uint32_t step = fold_step + 1;
    for (int mask = 1; mask < f.pof2; mask <<= 1, ++step) {
      const int peer = f.real(vrank ^ mask);
      ch.post_send(peer, step, mine, bytes);
      ch.post_recv(peer, step, tmp, bytes);
      ch.wait_all();
      // The lower rank's data first on both sides, so both hold bit-identical results even
      // where rounding makes the order matter.
      if (peer < r) sdk::reduce(a.dtype, a.redop, a.recvbuf, tmp, mine, a.count);
      else sdk::reduce(a.dtype, a.redop, a.recvbuf, mine, tmp, a.count);
      mine = a.recvbuf;
    }
    if (mine != a.recvbuf) detail::copy_bytes(a.recvbuf, mine, bytes);  // one rank: nothing exchanged
    if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, a.recvbuf, a.count, n);
  }
  // Unfold: the ranks that sat out get the final result.
  if (f.takes_partner(r)) ch.post_send(r + 1, unfold_step, a.recvbuf, bytes);
  if (f.sits_out(r)) ch.post_recv(r - 1, unfold_step, a.recvbuf, bytes);
  ch.wait_all();
}

void recursive_doubling_allgather(Channel& ch, const CollectiveArgs& a) {
  const int n = ch.size(), r = ch.rank();
  if ((n & (n - 1)) != 0)
    sdk::fail(CB_ERR_INTERNAL, "recursive doubling allgather on " + std::to_string(n) +
                                   " ranks: needs a power of two (the selection runs the ring)");
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  void* own = detail::at(a.recvbuf, static_cast<size_t>(r) * a.count, es);
  if (n == 1) return detail::copy_bytes(own, a.sendbuf, block);
  // Before round k each rank holds the 2^k blocks of its aligned group of 2^k ranks; it swaps
  // them with the partner group's, doubling what it holds.
  uint32_t step = 0;
  for (int mask = 1; mask < n; mask <<= 1, ++step) {
    const int peer = r ^ mask;
    const size_t mine = static_cast<size_t>(r & ~(mask - 1)), theirs = static_cast<size_t>(peer & ~(mask - 1));
    const size_t bytes = static_cast<size_t>(mask) * block;
    // Round 0 sends the own block straight from sendbuf and copies it into place while the
    // exchange is in flight (out of place, copying first left 2 ranks at 0.35x Open MPI at 1 MiB).
    ch.post_send(peer, step, mask == 1 ? a.sendbuf : detail::at(a.recvbuf, mine * a.count, es), bytes);
    ch.post_recv(peer, step, detail::at(a.recvbuf, theirs * a.count, es), bytes);
    if (mask == 1) detail::copy_bytes(own, a.sendbuf, block);
    ch.wait_all();
  }
}

}  // namespace commbench::ucx_backend
