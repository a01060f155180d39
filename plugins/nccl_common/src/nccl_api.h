// The NCCL API as a table of function pointers, so that one implementation serves two plugins:
// `nccl` fills it with the functions of the libnccl it was linked against, `ncclx` with those of
// a library chosen at run time (Meta's NCCLX, or any NCCL-API build), found with dlsym.
#pragma once

#include <nccl.h>

#include <string>

namespace commbench::nccl_backend {

struct NcclApi {
  std::string library;  // path or soname it came from
  bool linked = false;  // true: resolved by the linker at build time

  // Required by the plugin.
  ncclResult_t (*GetVersion)(int*) = nullptr;
  const char* (*GetErrorString)(ncclResult_t) = nullptr;
  const char* (*GetLastError)(ncclComm_t) = nullptr;
  ncclResult_t (*GetUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*CommInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*CommFinalize)(ncclComm_t) = nullptr;
  ncclResult_t (*CommAbort)(ncclComm_t) = nullptr;
  ncclResult_t (*CommGetAsyncError)(ncclComm_t, ncclResult_t*) = nullptr;
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*AllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*ReduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*Broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*Reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*Send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*Recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*GroupStart)() = nullptr;
  ncclResult_t (*GroupEnd)() = nullptr;

  // Optional: used when present, emulated or reported unsupported otherwise.
  ncclResult_t (*AlltoAll)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;  // NCCL >= 2.28
  ncclResult_t (*Gather)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*Scatter)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*MemAlloc)(void**, size_t) = nullptr;
  ncclResult_t (*MemFree)(void*) = nullptr;
  ncclResult_t (*CommRegister)(ncclComm_t, void*, size_t, void**) = nullptr;
  ncclResult_t (*CommDeregister)(ncclComm_t, void*) = nullptr;
  // NCCLX extension: alltoall with per-peer counts and displacements (in elements).
  ncclResult_t (*AllToAllv)(const void*, const size_t[], const size_t[], void*, const size_t[], const size_t[],
                            ncclDataType_t, ncclComm_t, cudaStream_t) = nullptr;

  bool is_ncclx() const { return AllToAllv != nullptr; }
};

// Loads `path` with dlopen (RTLD_LOCAL) and resolves every function above. Throws PluginError:
// CB_ERR_UNAVAILABLE when the library cannot be loaded, CB_ERR_INVALID_ARGUMENT naming the first
// required symbol it lacks ("not an NCCL-API library"). The handle stays open for the process.
NcclApi load_nccl_api(const std::string& path);

// Fills the optional entries of `api` (AlltoAll, Gather, Scatter, MemAlloc, MemFree, CommRegister,
// CommDeregister, AllToAllv) from the library `handle`; missing ones stay null.
void resolve_optional_nccl_symbols(void* handle, NcclApi& api);

// "2.28.3" from ncclGetVersion's code (2.x: major*10000 + minor*100 + patch).
std::string version_string(int code);

}  // namespace commbench::nccl_backend
