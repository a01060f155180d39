// commbench's dtypes and reduce ops in NCCL's terms, and NCCL/CUDA errors in the core's.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <optional>
#include <string>
#include <string_view>

#include "commbench/backend.h"
#include "nccl_api.h"

namespace commbench::nccl_backend {

// nullopt: NCCL has no such type (fp8 before NCCL 2.24 is checked against the version).
std::optional<ncclDataType_t> nccl_dtype(cb_dtype dtype, int nccl_version);
std::optional<ncclRedOp_t> nccl_redop(cb_redop redop);

// The dtypes this NCCL moves and reduces (CB_BIT set).
uint64_t supported_dtypes(int nccl_version);

// Throws PluginError for a failed NCCL call: remote/timeout-like results map to CB_ERR_REMOTE,
// ncclInvalidArgument/Usage to CB_ERR_INVALID_ARGUMENT, the rest to CB_ERR_INTERNAL; the message
// has NCCL's error string and, when the library has it, ncclGetLastError's detail.
void check_nccl(const NcclApi& api, ncclComm_t comm, std::string_view call, ncclResult_t r);
void check_cuda(std::string_view call, cudaError_t e);

}  // namespace commbench::nccl_backend
