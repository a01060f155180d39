// The full-mesh connect of a communicator, with the addresses exchanged through the bootstrap's
// allgather (address_table.h says why not through gloo's store-based connectFullMesh).
#pragma once

#include <chrono>
#include <memory>

#include <gloo/context.h>
#include <gloo/transport/device.h>

#include "commbench/backend.h"

namespace commbench::gloo_backend {

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
