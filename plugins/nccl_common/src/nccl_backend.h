// The per-process object of the nccl/ncclx plugins: host services, options, the NCCL API table
// and the CUDA device this rank uses. init() finds out whether this process can run NCCL at all
// (a device, enough devices for the ranks on this host) and reports CB_ERR_UNAVAILABLE if not,
// so the core skips the run with that reason instead of failing it.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "commbench/backend.h"
#include "nccl_api.h"
#include "nccl_options.h"

struct cb_backend {
  cb_host_services host{};
  commbench::nccl_backend::NcclOptions options;
  commbench::nccl_backend::NcclApi api;
  std::string plugin;  // "nccl" or "ncclx"
  int version = 0;     // ncclGetVersion
  int device = 0;
  int compute_major = 0, compute_minor = 0;  // of `device`; fp8 reductions need 9.0
  std::string host_id;  // NCCL_HOSTID of this rank when ranks share a GPU (CB_HOST_SHARED_DEVICE)
};

namespace commbench::nccl_backend {

// `load_api` gives the API table once the options are known (linked, or dlopen'ed for ncclx).
std::unique_ptr<cb_backend> create_nccl_backend(const cb_host_services& host, const char* plugin,
                                                const std::function<NcclApi(const NcclOptions&)>& load_api);

// Static capabilities (before init) given the NCCL version the plugin was built against or
// found; with a compute capability (after init), fp8 reductions only from 9.0 (sm90), as NCCL.
cb_capabilities nccl_capabilities(int nccl_version, int compute_major = 0);

void emit_nccl_metadata(const cb_backend& backend, void (*emit)(void*, const char*, const char*), void* ctx);

}  // namespace commbench::nccl_backend
