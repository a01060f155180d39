#include "nccl_types.h"

#include "commbench/sdk/plugin_error.hpp"

namespace commbench::nccl_backend {

std::optional<ncclDataType_t> nccl_dtype(cb_dtype d, int version) {
  switch (d) {
    case CB_DTYPE_INT8: return ncclInt8;
    case CB_DTYPE_UINT8: return ncclUint8;
    case CB_DTYPE_INT32: return ncclInt32;
    case CB_DTYPE_UINT32: return ncclUint32;
    case CB_DTYPE_INT64: return ncclInt64;
    case CB_DTYPE_UINT64: return ncclUint64;
    case CB_DTYPE_F16: return ncclFloat16;
    case CB_DTYPE_BF16: return ncclBfloat16;
    case CB_DTYPE_F32: return ncclFloat32;
    case CB_DTYPE_F64: return ncclFloat64;
    // fp8 arrived in NCCL 2.24 (enum values 10 and 11 there and since).
    case CB_DTYPE_F8E4M3: return version >= 22400 ? std::optional(static_cast<ncclDataType_t>(10)) : std::nullopt;
    case CB_DTYPE_F8E5M2: return version >= 22400 ? std::optional(static_cast<ncclDataType_t>(11)) : std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<ncclRedOp_t> nccl_redop(cb_redop r) {
  switch (r) {
    case CB_REDOP_SUM: return ncclSum;
    case CB_REDOP_PROD: return ncclProd;
    case CB_REDOP_MIN: return ncclMin;
    case CB_REDOP_MAX: return ncclMax;
    case CB_REDOP_AVG: return ncclAvg;
    default: return std::nullopt;
  }
}

uint64_t supported_dtypes(int version) {
  uint64_t bits = 0;
  for (int d = 0; d < CB_DTYPE_COUNT_V1; ++d)
    if (nccl_dtype(static_cast<cb_dtype>(d), version)) bits |= CB_BIT(d);
  return bits;
}

void check_nccl(const NcclApi& api, ncclComm_t comm, std::string_view call, ncclResult_t r) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  std::string message(call);
  message += ": ";
  message += api.GetErrorString ? api.GetErrorString(r) : "NCCL error " + std::to_string(r);
  if (api.GetLastError) {
    const char* detail = api.GetLastError(comm);
    if (detail && *detail) message.append(" (").append(detail).append(")");
  }
  cb_status status = CB_ERR_INTERNAL;
  if (r == ncclInvalidArgument || r == ncclInvalidUsage) status = CB_ERR_INVALID_ARGUMENT;
  if (r == ncclRemoteError || r == ncclSystemError) status = CB_ERR_REMOTE;
  sdk::fail(status, message);
}

void check_cuda(std::string_view call, cudaError_t e) {
  if (e == cudaSuccess) return;
  const cb_status status = e == cudaErrorMemoryAllocation ? CB_ERR_RESOURCE_EXHAUSTED
                           : (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
                               ? CB_ERR_UNAVAILABLE
                               : CB_ERR_INTERNAL;
  sdk::fail(status, std::string(call) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

}  // namespace commbench::nccl_backend
