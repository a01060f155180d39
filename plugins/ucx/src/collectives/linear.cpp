#include "linear.h"

#include "blocks.h"
#include "commbench/sdk/dtypes.hpp"

namespace commbench::ucx_backend {

using detail::at;

void linear_gather(Channel& ch, const CollectiveArgs& a) {
  const int n = ch.size(), r = ch.rank();
  const size_t es = sdk::dtype_size(a.dtype), block = a.count * es;
  if (r != a.root) {
    ch.post_send(a.root, 0, a.sendbuf, block);
  } else {
    // In place the root's block is already at recvbuf + root*count.
    detail::copy_bytes(at(a.recvbuf, static_cast<size_t>(r) * a.count, es), a.sendbuf, block);
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
    // In place the root's block is already at sendbuf + root*count.
    detail::copy_bytes(a.recvbuf, at(a.sendbuf, static_cast<size_t>(r) * a.count, es), block);
  }
  ch.wait_all();
}

}  // namespace commbench::ucx_backend
