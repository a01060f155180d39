#include "communicator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include <gloo/barrier.h>
#include <gloo/rendezvous/context.h>

#include "errors.h"
#include "host_resources.h"
#include "host_store.h"

namespace commbench::gloo_backend {
namespace {

// 64 random bits from rank 0 name the communicator's keys in the host's store, so two
// communicators of one run (or one process hosting several ranks) never read each other's
// addresses, and a retried comm_create never reads stale ones.
std::string agree_on_key_prefix(const cb_host_services& host, int32_t timeout_ms) {
  uint64_t id = 0;
  if (host.rank == 0) {
    std::random_device device;
    id = (static_cast<uint64_t>(device()) << 32) ^ device() ^
         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  }
  const cb_status status = host.bootstrap_broadcast(host.ctx, &id, sizeof(id), 0, timeout_ms);
  if (status != CB_OK)
    fail(status, "bootstrap_broadcast of the communicator id failed (status " +
                     std::to_string(static_cast<int>(status)) + ")");
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(id));
  return std::string("gloo/") + hex + "/";
}

}  // namespace

std::unique_ptr<cb_comm> create_communicator(cb_backend& backend, int32_t timeout_ms) {
  const cb_host_services& host = backend.host;
  const auto start = std::chrono::steady_clock::now();

  check_full_mesh_fits(host);  // before the long connect, not after it fails on the host's limits
  HostKvStore store(host, agree_on_key_prefix(host, timeout_ms), std::chrono::milliseconds(timeout_ms));
  auto context = std::make_shared<gloo::rendezvous::Context>(host.rank, host.world_size);
  // Set before connecting: the transport copies the timeout for its pairs at connect time. Never
  // longer than comm_create's timeout (docs/plugin-abi.md §4, "Deadlines"): a collective whose
  // peer never arrives must end within the time the core has left, not the 300 s default.
  auto op_timeout = backend.options.timeout;
  if (timeout_ms >= 0) op_timeout = std::min(op_timeout, std::chrono::milliseconds(timeout_ms));
  context->setTimeout(op_timeout);
  context->connectFullMesh(store, backend.device);

  auto comm = std::make_unique<cb_comm>();
  comm->backend = &backend;
  comm->context = std::move(context);
  comm->rank = host.rank;
  comm->size = host.world_size;

  // A rank's connect can finish while a peer is still completing its side; without this
  // barrier a fast rank could return, fail its first op and close its connections under the
  // slow one. It also proves the mesh carries traffic before the first measured op.
  gloo::BarrierOptions barrier(comm->context);
  barrier.setTag(comm->take_tag());
  gloo::barrier(barrier);

  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  backend.log(CB_LOG_INFO, "gloo: rank " + std::to_string(comm->rank) + " connected to " +
                               std::to_string(comm->size - 1) + " peers in " +
                               std::to_string(elapsed.count()) + " ms");
  return comm;
}

void abort_communicator(cb_comm& comm) {
  if (comm.context) comm.context->closeConnections();
}

}  // namespace commbench::gloo_backend
