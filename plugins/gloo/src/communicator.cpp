#include "communicator.h"

#include <algorithm>
#include <chrono>
#include <string>

#include <gloo/barrier.h>

#include "errors.h"
#include "full_mesh.h"
#include "host_resources.h"

namespace commbench::gloo_backend {
namespace {

// gloo binds where the options say, loopback by default: right for ranks on one host, and a
// connection refused or timed out when the ranks span hosts. A failed connect is then named for
// what it is, not as "the peer probably exited".
bool bound_to_loopback(const GlooOptions& o) {
  return o.iface.empty() && (o.hostname.rfind("127.", 0) == 0 || o.hostname == "localhost" || o.hostname == "::1");
}

}  // namespace

std::unique_ptr<cb_comm> connect_communicator(cb_backend& backend, int32_t timeout_ms);

std::unique_ptr<cb_comm> create_communicator(cb_backend& backend, int32_t timeout_ms) {
  const cb_host_services& host = backend.host;
  if (host.local_world_size <= 0 || host.local_world_size >= host.world_size || !bound_to_loopback(backend.options))
    return connect_communicator(backend, timeout_ms);
  try {
    return connect_communicator(backend, timeout_ms);
  } catch (const std::exception& e) {
    sdk::fail(CB_ERR_INVALID_ARGUMENT,
              "gloo listens on " + backend.options.hostname + " (its default, loopback), but this execution spans hosts (" +
                  std::to_string(host.world_size) + " ranks, " + std::to_string(host.local_world_size) +
                  " on this one): ranks on other hosts cannot reach it. Set the gloo option iface in the run "
                  "(options.gloo = { iface = \"eth0\" }: an interface every host has) or hostname (an address of each "
                  "host); the connection failed with: " + e.what());
  }
}

std::unique_ptr<cb_comm> connect_communicator(cb_backend& backend, int32_t timeout_ms) {
  const cb_host_services& host = backend.host;
  const auto start = std::chrono::steady_clock::now();

  check_full_mesh_fits(host);  // before the long connect, not after it fails on the host's limits
  // Never longer than comm_create's timeout (docs/plugin-abi.md §4, "Deadlines"): a collective
  // whose peer never arrives must end within the time the core has left, not the 300 s default.
  auto op_timeout = backend.options.timeout;
  if (timeout_ms >= 0) op_timeout = std::min(op_timeout, std::chrono::milliseconds(timeout_ms));

  auto comm = std::make_unique<cb_comm>();
  comm->backend = &backend;
  FullMesh mesh = connect_full_mesh(host, backend.device, op_timeout, timeout_ms);
  comm->context = std::move(mesh.context);
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
                               std::to_string(elapsed.count()) + " ms (addresses: " +
                               std::to_string(mesh.address_bytes) + " bytes here, packed into " +
                               std::to_string(mesh.list_bytes) + " per rank for the bootstrap allgather)");
  return comm;
}

void abort_communicator(cb_comm& comm) {
  if (comm.context) comm.context->closeConnections();
}

}  // namespace commbench::gloo_backend
