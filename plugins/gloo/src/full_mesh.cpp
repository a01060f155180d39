#include "full_mesh.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>

#include "address_table.h"
#include "errors.h"

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

class Deadline {
 public:
  explicit Deadline(int32_t timeout_ms)
      : timeout_ms_(timeout_ms), end_(std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0))) {}

  int32_t remaining_ms() const {
    if (timeout_ms_ < 0) return -1;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - std::chrono::steady_clock::now());
    return static_cast<int32_t>(std::clamp<int64_t>(left.count(), 0, std::numeric_limits<int32_t>::max()));
  }
  int32_t timeout_ms() const { return timeout_ms_; }

 private:
  int32_t timeout_ms_;
  std::chrono::steady_clock::time_point end_;
};

}  // namespace

std::vector<char> clean_tcp_address(const std::vector<char>& bytes) {
  const gloo::transport::tcp::Address address(bytes);
  const sockaddr_storage& raw = address.getSockaddr();
  sockaddr_storage clean{};
  size_t length = sizeof(clean);
  if (raw.ss_family == AF_INET) length = sizeof(sockaddr_in);
  if (raw.ss_family == AF_INET6) length = sizeof(sockaddr_in6);
  std::memcpy(&clean, &raw, length);
  return gloo::transport::tcp::Address(clean, address.getSeq()).bytes();
}

namespace {

void allgather(const cb_host_services& host, const void* send, size_t bytes, void* recv, const Deadline& deadline,
               const char* what) {
  const cb_status status = host.bootstrap_allgather(host.ctx, send, bytes, recv, deadline.remaining_ms());
  if (status == CB_ERR_TIMEOUT)
    fail(CB_ERR_TIMEOUT, std::string("rendezvous timed out (comm_create timeout ") +
                             std::to_string(deadline.timeout_ms()) + " ms) in the bootstrap allgather of " + what +
                             ": some rank did not reach comm_create; the bootstrap's message in this rank's log says which");
  if (status != CB_OK)
    fail(status, std::string("the bootstrap allgather of ") + what + " failed with status " +
                     std::to_string(static_cast<int>(status)));
}

}  // namespace

FullMesh connect_full_mesh(const cb_host_services& host, const std::shared_ptr<gloo::transport::Device>& device,
                           std::chrono::milliseconds op_timeout, int32_t timeout_ms) {
  const int rank = host.rank, world = host.world_size;
  const Deadline deadline(timeout_ms);
  auto context = std::make_shared<MeshContext>(rank, world);
  context->setTimeout(op_timeout);
  std::shared_ptr<gloo::transport::Context> transport = device->createContext(rank, world);
  transport->setTimeout(op_timeout);  // the pairs copy it when created

  FullMesh mesh;
  std::vector<std::vector<char>> addresses(static_cast<size_t>(world));
  for (int peer = 0; peer < world; ++peer)
    if (peer != rank) {
      addresses[static_cast<size_t>(peer)] = clean_tcp_address(transport->createPair(peer)->address().bytes());
      mesh.address_bytes += addresses[static_cast<size_t>(peer)].size();
    }
  std::vector<char> packed = pack_addresses(addresses);

  // Lists differ in length (a differing byte more or less): lengths first, then every list
  // padded to the longest.
  const uint64_t length = packed.size();
  std::vector<uint64_t> lengths(static_cast<size_t>(world));
  allgather(host, &length, sizeof(length), lengths.data(), deadline, "the lengths of the ranks' Gloo address lists");
  const uint64_t longest = *std::max_element(lengths.begin(), lengths.end());
  // A list is a few bytes per peer; a length far beyond that is a different build, not memory to ask for.
  const uint64_t bound = 4096 + static_cast<uint64_t>(world) * 1024;
  if (longest > bound)
    fail(CB_ERR_INTERNAL, "a rank published a Gloo address list of " + std::to_string(longest) +
                              " bytes, more than " + std::to_string(bound) + " for " + std::to_string(world) +
                              " ranks: its plugin is a different build than this rank's; use one build on every rank");
  packed.resize(static_cast<size_t>(longest));
  std::vector<char> table(static_cast<size_t>(longest) * static_cast<size_t>(world));
  allgather(host, packed.data(), packed.size(), table.data(), deadline, "the ranks' Gloo addresses");

  // Rank order on every rank, as gloo's own connect.
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank) continue;
    const std::span<const char> list(table.data() + static_cast<size_t>(peer) * longest,
                                     static_cast<size_t>(lengths[static_cast<size_t>(peer)]));
    transport->getPair(peer)->connect(unpack_address(list, rank, peer));
  }
  context->adopt(device, std::move(transport));
  mesh.context = std::move(context);
  mesh.list_bytes = static_cast<size_t>(longest);
  return mesh;
}

}  // namespace commbench::gloo_backend
