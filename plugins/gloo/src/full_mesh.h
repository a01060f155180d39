// The full-mesh connect of a communicator, with the addresses exchanged by one bootstrap
// allgather (address_table.h says why not through gloo's store-based connectFullMesh).
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include "commbench/backend.h"

namespace commbench::gloo_backend {

// gloo's TCP address copies a whole sockaddr_storage, whose bytes past the socket address are
// whatever was on the stack (pointers of the process among them). The same address with those
// bytes zeroed: they neither travel nor defeat the packing (address_table.h), and the peer reads
// only the socket address and the sequence number.
std::vector<char> clean_tcp_address(const std::vector<char>& bytes);

struct FullMesh {
  std::shared_ptr<gloo::Context> context;
  size_t list_bytes = 0;     // the longest rank's packed address list: what each rank contributed
  size_t address_bytes = 0;  // this rank's addresses unpacked, for comparison
};

// Collective over the host's ranks: creates a pair per peer on `device`, allgathers every rank's
// pair addresses and connects each pair in rank order, as gloo's connectFullMesh does. Pairs and
// later ops wait at most `op_timeout`; the exchange at most `timeout_ms` (negative: no limit).
FullMesh connect_full_mesh(const cb_host_services& host, const std::shared_ptr<gloo::transport::Device>& device,
                           std::chrono::milliseconds op_timeout, int32_t timeout_ms);

}  // namespace commbench::gloo_backend
