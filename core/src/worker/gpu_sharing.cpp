#include "worker/gpu_sharing.h"

#include <array>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "common/host_identity.h"

namespace commbench {
namespace {

// What identifies "this GPU on this host" across processes: the host as NCCL sees it (hostname,
// and the kernel's boot id, which network namespaces share) and the device's PCI bus id.
struct DeviceIdentity {
  std::array<char, 64> host{};
  std::array<char, 40> boot{};
  std::array<char, 24> bus{};  // empty: this rank has no device
};

template <size_t N>
void put(std::array<char, N>& to, const std::string& s) {
  std::memcpy(to.data(), s.data(), std::min(s.size(), N - 1));
}

template <size_t N>
std::string get(const std::array<char, N>& a) {
  return std::string(a.data(), strnlen(a.data(), N));
}

DeviceIdentity identity_of(const GpuDevice* gpu) {
  DeviceIdentity id;
  put(id.host, host_name());
  put(id.boot, kernel_boot_id());
  if (gpu) put(id.bus, gpu->pci_bus_id());
  return id;
}

}  // namespace

std::string gpu_sharing_problem(Bootstrap& bootstrap, const GpuDevice* gpu, bool allowed, Millis timeout) {
  const DeviceIdentity mine = identity_of(gpu);
  std::vector<DeviceIdentity> all(static_cast<size_t>(bootstrap.world_size()));
  bootstrap.allgather(&mine, sizeof(mine), all.data(), timeout);
  if (allowed) return "";
  for (size_t a = 0; a < all.size(); ++a) {
    if (get(all[a].bus).empty()) continue;
    for (size_t b = a + 1; b < all.size(); ++b) {
      if (get(all[a].bus) != get(all[b].bus) || get(all[a].host) != get(all[b].host) ||
          get(all[a].boot) != get(all[b].boot))
        continue;
      return fmt::format(
          "ranks {} and {} would share one GPU (PCI {} on host {}): NCCL refuses two ranks on one GPU "
          "(\"Duplicate GPU detected\") and a shared GPU measures contention, not the library. Give "
          "each rank its own GPU (lower world_size; do not pin every rank to the same device with "
          "CUDA_VISIBLE_DEVICES or `device`), or set oversubscribe_gpu = true for a correctness-only run",
          a, b, get(all[a].bus), get(all[a].host));
    }
  }
  return "";
}

}  // namespace commbench
