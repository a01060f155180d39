#include "host_resources.h"

#include <sys/resource.h>

#include <fstream>

#include "commbench/sdk/plugin_error.hpp"

namespace commbench::gloo_backend {
namespace {

// Descriptors a worker holds besides the mesh: its log, pipes, the store, libraries, the device.
constexpr long kBaseDescriptors = 64;

struct PortRange {
  long low = 32768, high = 60999;  // Linux's default
  long size() const { return high - low + 1; }
};

PortRange ephemeral_ports() {
  PortRange r;
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  long low = 0, high = 0;
  if (in >> low >> high && high >= low) r = PortRange{low, high};
  return r;
}

}  // namespace

void check_full_mesh_fits(const cb_host_services& host) {
  const long world = host.world_size, here = std::max<int32_t>(host.local_world_size, 1);
  if (world < 2) return;
  const long ports = here * (world - 1);
  const PortRange range = ephemeral_ports();
  if (ports > range.size())
    sdk::fail(CB_ERR_RESOURCE_EXHAUSTED,
              "a Gloo full mesh of " + std::to_string(world) + " ranks needs " + std::to_string(ports) +
                  " local ports on this host at once (" + std::to_string(here) + " ranks here, each listening once per peer "
                  "while it connects), but net.ipv4.ip_local_port_range gives " + std::to_string(range.size()) + " (" +
                  std::to_string(range.low) + "-" + std::to_string(range.high) +
                  "): use fewer ranks per host, widen the range (sysctl net.ipv4.ip_local_port_range), or another backend");
  rlimit nofile{};
  const long descriptors = 2 * (world - 1) + kBaseDescriptors;
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      static_cast<long>(nofile.rlim_cur) < descriptors)
    sdk::fail(CB_ERR_RESOURCE_EXHAUSTED,
              "a Gloo full mesh of " + std::to_string(world) + " ranks needs about " + std::to_string(descriptors) +
                  " file descriptors per rank (two per peer while connecting), but this process may open " +
                  std::to_string(nofile.rlim_cur) + " (ulimit -n): raise the limit or use fewer ranks");
}

std::string resource_exhaustion_hint(std::string_view message) {
  if (message.find("Address already in use") != std::string_view::npos ||
      message.find("Cannot assign requested address") != std::string_view::npos)
    return "this host ran out of local ports for Gloo's connections (each rank listens once per peer while it "
           "connects; net.ipv4.ip_local_port_range limits them): use fewer ranks per host or widen the range";
  if (message.find("Too many open files") != std::string_view::npos)
    return "a rank ran out of file descriptors for Gloo's connections (two per peer): raise ulimit -n or use fewer "
           "ranks";
  return "";
}

}  // namespace commbench::gloo_backend
