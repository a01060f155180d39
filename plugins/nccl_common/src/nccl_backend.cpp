#include "nccl_backend.h"

#include <cuda_runtime_api.h>

#include <unistd.h>

#include <cstdlib>

#include "commbench/sdk/capabilities.hpp"
#include "commbench/sdk/device_choice.hpp"
#include "commbench/sdk/host_services.hpp"
#include "nccl_types.h"

namespace commbench::nccl_backend {

// oversubscribe_gpu (CB_HOST_SHARED_DEVICE): NCCL refuses two ranks of one host on one GPU
// ("Duplicate GPU detected"); a host id of its own per rank, read when the communicator is
// created, makes each rank a host of its own, and the ranks then talk over NCCL's network
// transport (sockets here). A correctness mode: the core labels every record of such a run.
void make_rank_its_own_host(cb_backend& b) {
  if (const char* set = std::getenv("NCCL_HOSTID"); set && *set) {
    b.host_id = std::string(set) + " (set by the user: ranks sharing a GPU must each have their own)";
    return;
  }
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  b.host_id = std::string(name) + "-commbench-rank" + std::to_string(b.host.rank);
  ::setenv("NCCL_HOSTID", b.host_id.c_str(), 1);
}

std::unique_ptr<cb_backend> create_nccl_backend(const cb_host_services& host, const char* plugin,
                                                const std::function<NcclApi(const NcclOptions&)>& load_api) {
  auto b = std::make_unique<cb_backend>();
  b->plugin = plugin;
  b->host = sdk::copy_host_services(host, plugin);
  b->options = parse_nccl_options(b->host.options, b->host.num_options, plugin);
  b->api = load_api(b->options);
  check_nccl(b->api, nullptr, "ncclGetVersion", b->api.GetVersion(&b->version));
  // The device check comes after the options and the library: those errors are the user's to fix
  // on any machine, "no device" only where there is none.
  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0)
    sdk::fail(CB_ERR_UNAVAILABLE, std::string("no CUDA device (cudaGetDeviceCount: ") +
                                      (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  // The same rule as the core's, so the communicator is created on the device the core's buffers
  // are on (one GPU per rank pinned by CUDA_VISIBLE_DEVICES counts as that rank's own).
  const bool shared = (b->host.flags & CB_HOST_SHARED_DEVICE) != 0;
  const sdk::DeviceChoice choice =
      sdk::choose_device(b->host.local_rank, b->host.local_world_size, devices, b->options.device,
                         std::getenv("CUDA_VISIBLE_DEVICES"), shared);
  if (!choice.error.empty())
    sdk::fail(b->options.device ? CB_ERR_INVALID_ARGUMENT : CB_ERR_UNAVAILABLE,
              b->options.device ? "option " + choice.error : choice.error + ": this world size is skipped");
  b->device = choice.device;
  if (shared) make_rank_its_own_host(*b);
  check_cuda("cudaSetDevice", cudaSetDevice(b->device));
  check_cuda("cudaDeviceGetAttribute",
             cudaDeviceGetAttribute(&b->compute_major, cudaDevAttrComputeCapabilityMajor, b->device));
  check_cuda("cudaDeviceGetAttribute",
             cudaDeviceGetAttribute(&b->compute_minor, cudaDevAttrComputeCapabilityMinor, b->device));
  return b;
}

cb_capabilities nccl_capabilities(int version, int compute_major) {
  cb_capabilities c{};
  c.struct_size = sizeof(c);
  c.ops = sdk::all_bits(CB_OP_COUNT_V1);
  c.dtypes = c.reduce_dtypes = supported_dtypes(version);
  if (compute_major > 0 && compute_major < 9) c.reduce_dtypes &= ~(CB_BIT(CB_DTYPE_F8E4M3) | CB_BIT(CB_DTYPE_F8E5M2));
  c.redops = sdk::all_bits(CB_REDOP_COUNT_V1);
  c.mem_types = CB_BIT(CB_MEM_CUDA);
  // Posts are capturable (CB_CAP_GRAPH_CAPTURE): NCCL's collectives can be captured, and during
  // capture post records no completion event (nccl_ops.cpp).
  c.flags = CB_CAP_STREAM_ORDERED | CB_CAP_ASYNC | CB_CAP_GROUPS | CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE |
            CB_CAP_GRAPH_CAPTURE;
  return c;
}

void emit_nccl_metadata(const cb_backend& b, void (*emit)(void*, const char*, const char*), void* ctx) {
  auto put = [&](const char* k, const std::string& v) { emit(ctx, k, v.c_str()); };
  put("nccl_version", version_string(b.version));
  put("library", b.api.library);
  put("ncclx", b.api.is_ncclx() ? "yes (ncclAllToAllv present)" : "no");
  put("alltoall_path", b.api.AllToAllv ? "ncclAllToAllv (NCCLX)" : b.api.AlltoAll ? "ncclAlltoAll" : "grouped ncclSend/ncclRecv");
  put("native_alltoall_gather_scatter", b.api.AlltoAll && b.api.Gather && b.api.Scatter ? "yes" : "no (grouped send/recv)");
  put("blocking", b.options.blocking.value_or(1) ? "yes" : "no (ncclInProgress settled per call)");
  put("compute_capability", std::to_string(b.compute_major) + "." + std::to_string(b.compute_minor));
  put("registration", b.options.registration ? "on" : "off");
  put("device", std::to_string(b.device));
  if (!b.host_id.empty()) put("gpu_shared", "yes (oversubscribe_gpu; NCCL_HOSTID=" + b.host_id + ")");
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, b.device) == cudaSuccess) put("gpu", prop.name);
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), b.device) == cudaSuccess) put("pci_bus_id", bus);
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) put("cuda_runtime", std::to_string(v));
  if (cudaDriverGetVersion(&v) == cudaSuccess) put("cuda_driver", std::to_string(v));
}

}  // namespace commbench::nccl_backend
