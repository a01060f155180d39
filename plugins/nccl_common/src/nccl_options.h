// Options of the nccl and ncclx plugins ([run.options.nccl] / [run.options.ncclx]).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include <nccl.h>

#include "commbench/backend.h"

namespace commbench::nccl_backend {

struct NcclOptions {
  std::optional<int> blocking;          // ncclConfig_t.blocking (unset: 1, NCCL's and nccl-tests' default)
  std::optional<int> cga_cluster_size;  // ncclConfig_t.cgaClusterSize
  std::optional<int> min_ctas;          // ncclConfig_t.minCTAs
  std::optional<int> max_ctas;          // ncclConfig_t.maxCTAs
  std::string net_name;                 // ncclConfig_t.netName ("IB", "Socket")
  bool registration = false;            // buffers from ncclMemAlloc, registered with the communicator
  std::optional<int> device;            // CUDA device; default: the local rank
  std::string library;                  // ncclx only: the NCCL-API library to load
  std::chrono::milliseconds timeout{300000};  // every wait; past it the communicator is aborted
};

// `plugin` is "nccl" or "ncclx" (only ncclx takes `library`).
NcclOptions parse_nccl_options(const cb_option* options, size_t count, const char* plugin);

}  // namespace commbench::nccl_backend

namespace commbench::nccl_backend {

// The ncclConfig_t for these options. min_ctas alone also sets maxCTAs (to at least min_ctas):
// NCCL checks minCTAs <= maxCTAs, and an undefined maxCTAs fails that check.
ncclConfig_t make_nccl_config(const NcclOptions& options);

}  // namespace commbench::nccl_backend
