// Dissemination barrier: in round k every rank signals rank + 2^k and waits for rank - 2^k;
// after ceil(log2 n) rounds every rank has heard, directly or not, from every other.
#include "algorithms.h"

namespace commbench::ucx_backend::algorithms {

void dissemination_barrier(Channel& ch) {
  const int n = ch.size(), r = ch.rank();
  unsigned char token = 1, sink = 0;
  uint32_t step = 0;
  for (int dist = 1; dist < n; dist <<= 1, ++step) {
    ch.post_send(mod(r + dist, n), step, &token, 1);
    ch.post_recv(mod(r - dist, n), step, &sink, 1);
    ch.wait_all();
  }
}

}  // namespace commbench::ucx_backend::algorithms
