#include "nccl_backend.h"

#include <cuda_runtime_api.h>

#include "commbench/sdk/capabilities.hpp"
#include "commbench/sdk/host_services.hpp"
#include "nccl_types.h"

namespace commbench::nccl_backend {

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
  const int local_ranks = b->host.local_world_size > 0 ? b->host.local_world_size : 1;
  if (!b->options.device && local_ranks > devices)
    sdk::fail(CB_ERR_UNAVAILABLE, std::to_string(local_ranks) + " ranks on this host but " +
                                      std::to_string(devices) + " visible GPU(s): this world size is skipped "
                                      "(NCCL refuses two ranks on one GPU)");
  b->device = b->options.device.value_or(b->host.local_rank);
  if (b->device >= devices)
    sdk::fail(CB_ERR_INVALID_ARGUMENT, "option device = " + std::to_string(b->device) + " but only " +
                                           std::to_string(devices) + " device(s) are visible");
  check_cuda("cudaSetDevice", cudaSetDevice(b->device));
  return b;
}

cb_capabilities nccl_capabilities(int version) {
  cb_capabilities c{};
  c.struct_size = sizeof(c);
  c.ops = sdk::all_bits(CB_OP_COUNT_V1);
  c.dtypes = c.reduce_dtypes = supported_dtypes(version);
  c.redops = sdk::all_bits(CB_REDOP_COUNT_V1);
  c.mem_types = CB_BIT(CB_MEM_CUDA);
  c.flags = CB_CAP_STREAM_ORDERED | CB_CAP_ASYNC | CB_CAP_GROUPS | CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE;
  return c;
}

void emit_nccl_metadata(const cb_backend& b, void (*emit)(void*, const char*, const char*), void* ctx) {
  auto put = [&](const char* k, const std::string& v) { emit(ctx, k, v.c_str()); };
  put("nccl_version", version_string(b.version));
  put("library", b.api.library);
  put("ncclx", b.api.is_ncclx() ? "yes (ncclAllToAllv present)" : "no");
  put("native_alltoall_gather_scatter", b.api.AlltoAll && b.api.Gather && b.api.Scatter ? "yes" : "no (grouped send/recv)");
  put("registration", b.options.registration ? "on" : "off");
  put("device", std::to_string(b.device));
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, b.device) == cudaSuccess) put("gpu", prop.name);
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof(bus), b.device) == cudaSuccess) put("pci_bus_id", bus);
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) put("cuda_runtime", std::to_string(v));
  if (cudaDriverGetVersion(&v) == cudaSuccess) put("cuda_driver", std::to_string(v));
}

}  // namespace commbench::nccl_backend
