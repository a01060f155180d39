#include "prime.h"

#include <cstdint>
#include <string>
#include <vector>

#include "commbench/sdk/plugin_error.hpp"

namespace commbench::ucx_backend {

void prime_peers(Channel& ch, int messages, size_t bytes) {
  const int n = ch.size(), r = ch.rank();
  if (n < 2 || messages <= 0 || bytes == 0) return;
  if (static_cast<uint32_t>(messages) > kChannelSteps)
    sdk::fail(CB_ERR_INVALID_ARGUMENT, "priming with " + std::to_string(messages) + " messages per peer: at most " +
                                           std::to_string(kChannelSteps) + " (the channel's steps)");
  // The contents do not matter; each receive gets its own slot, as the channel requires.
  const std::vector<unsigned char> out(bytes, 0);
  std::vector<unsigned char> in(bytes * static_cast<size_t>(messages));
  for (int d = 1; d < n; ++d) {
    const int to = (r + d) % n, from = (r - d + n) % n;
    for (int i = 0; i < messages; ++i) {
      // Receives first: a message that finds its receive posted is copied straight into it.
      ch.post_recv(from, static_cast<uint32_t>(i), in.data() + static_cast<size_t>(i) * bytes, bytes);
      ch.post_send(to, static_cast<uint32_t>(i), out.data(), bytes);
    }
    ch.wait_all();
  }
}

}  // namespace commbench::ucx_backend
