#include "full_mesh.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>

#include "address_exchange.h"
#include "address_table.h"
#include "errors.h"
#include "tcp_address.h"

namespace commbench::gloo_backend {
namespace {

// gloo::Context keeps its device and transport context protected: connectFullMesh is how gloo
// fills them, and this connect takes its place.
class MeshContext final : public gloo::Context {
 public:
  using gloo::Context::Context;
  void adopt(std::shared_ptr<gloo::transport::Device> device,
             std::shared_ptr<gloo::transport::Context> transport) {
    device_ = std::move(device);
    transportContext_ = std::move(transport);
  }
};

}  // namespace

FullMesh connect_full_mesh(const cb_host_services& host, const std::shared_ptr<gloo::transport::Device>& device,
                           std::chrono::milliseconds op_timeout, int32_t timeout_ms) {
  const int rank = host.rank, world = host.world_size;
  const Deadline deadline(timeout_ms);
  auto context = std::make_shared<MeshContext>(rank, world);
  context->setTimeout(op_timeout);
  std::shared_ptr<gloo::transport::Context> transport = device->createContext(rank, world);
  transport->setTimeout(op_timeout);  // the pairs copy it when created: before the first one

  FullMesh mesh;
  std::vector<std::vector<char>> addresses(static_cast<size_t>(world));
  size_t address_size = 0;
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    auto& pair = transport->createPair(peer);
    pair->setLocalRank(std::max(host.local_rank, 0));  // as gloo's connect does
    auto& address = addresses[static_cast<size_t>(peer)] = clean_tcp_address(pair->address().bytes());
    address_size = address.size();
    mesh.address_bytes += address.size();
  }
  const AddressLists lists = exchange_address_lists(host, pack_addresses(addresses), deadline);

  // Rank order on every rank, as gloo's own connect.
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    const std::vector<char> address = unpack_address(lists.list(peer), rank, peer);
    if (address.size() != address_size)
      fail(CB_ERR_INTERNAL, "rank " + std::to_string(peer) + " published a Gloo address of " +
                                std::to_string(address.size()) + " bytes for rank " + std::to_string(rank) +
                                ", whose own are " + std::to_string(address_size) +
                                ": the two run different builds of gloo or of this plugin; use one build on every rank");
    transport->getPair(peer)->connect(address);
  }
  context->adopt(device, std::move(transport));
  mesh.context = std::move(context);
  mesh.list_bytes = lists.stride;
  return mesh;
}

}  // namespace commbench::gloo_backend
