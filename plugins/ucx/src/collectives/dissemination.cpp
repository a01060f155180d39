#include "dissemination.h"

#include "blocks.h"

namespace commbench::ucx_backend {

void dissemination_barrier(Channel& ch) {
  const int n = ch.size(), r = ch.rank();
  // 1-byte messages: some transports treat 0-byte ones specially, and 1 byte costs the same.
  unsigned char token = 1, sink = 0;
  uint32_t step = 0;
  for (int dist = 1; dist < n; dist <<= 1, ++step) {
    ch.post_send(detail::wrap(r + dist, n), step, &token, 1);
    ch.post_recv(detail::wrap(r - dist, n), step, &sink, 1);
    ch.wait_all();
  }
}

}  // namespace commbench::ucx_backend
