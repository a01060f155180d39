// The NCCL entry points a test rank uses, loaded with dlopen from a given path (like the nccl/ncclx
// plugins do), so one rank program exercises both the stock and the NCCLX variant.
#pragma once

#include <dlfcn.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>

struct NcclFns {
  void* handle = nullptr;
#define NCCL_FN(name) decltype(&::name) name = nullptr;
  NCCL_FN(ncclGetUniqueId)
  NCCL_FN(ncclCommInitRank)
  NCCL_FN(ncclCommInitRankConfig)
  NCCL_FN(ncclCommDestroy)
  NCCL_FN(ncclCommFinalize)
  NCCL_FN(ncclCommAbort)
  NCCL_FN(ncclCommGetAsyncError)
  NCCL_FN(ncclGetLastError)
  NCCL_FN(ncclGetErrorString)
  NCCL_FN(ncclCommCount)
  NCCL_FN(ncclCommUserRank)
  NCCL_FN(ncclAllReduce)
  NCCL_FN(ncclAllGather)
  NCCL_FN(ncclReduceScatter)
  NCCL_FN(ncclBroadcast)
  NCCL_FN(ncclReduce)
  NCCL_FN(ncclAlltoAll)
  NCCL_FN(ncclGather)
  NCCL_FN(ncclScatter)
  NCCL_FN(ncclSend)
  NCCL_FN(ncclRecv)
  NCCL_FN(ncclGroupStart)
  NCCL_FN(ncclGroupEnd)
  NCCL_FN(ncclMemAlloc)
  NCCL_FN(ncclMemFree)
  NCCL_FN(ncclCommRegister)
  NCCL_FN(ncclCommDeregister)
  NCCL_FN(ncclRedOpCreatePreMulSum)
  NCCL_FN(ncclRedOpDestroy)
#undef NCCL_FN
  using AllToAllvFn = ncclResult_t (*)(const void*, const size_t*, const size_t*, void*, const size_t*, const size_t*,
                                       ncclDataType_t, ncclComm_t, cudaStream_t);
  AllToAllvFn ncclAllToAllv = nullptr;

  explicit NcclFns(const char* path) {
    handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      std::fprintf(stderr, "dlopen %s: %s\n", path, ::dlerror());
      std::exit(3);
    }
#define NCCL_FN(name) name = reinterpret_cast<decltype(name)>(::dlsym(handle, #name));
    NCCL_FN(ncclGetUniqueId) NCCL_FN(ncclCommInitRank) NCCL_FN(ncclCommInitRankConfig) NCCL_FN(ncclCommDestroy)
    NCCL_FN(ncclCommFinalize) NCCL_FN(ncclCommAbort) NCCL_FN(ncclCommGetAsyncError) NCCL_FN(ncclGetLastError)
    NCCL_FN(ncclGetErrorString) NCCL_FN(ncclCommCount) NCCL_FN(ncclCommUserRank) NCCL_FN(ncclAllReduce)
    NCCL_FN(ncclAllGather) NCCL_FN(ncclReduceScatter) NCCL_FN(ncclBroadcast) NCCL_FN(ncclReduce)
    NCCL_FN(ncclAlltoAll) NCCL_FN(ncclGather) NCCL_FN(ncclScatter) NCCL_FN(ncclSend) NCCL_FN(ncclRecv)
    NCCL_FN(ncclGroupStart) NCCL_FN(ncclGroupEnd) NCCL_FN(ncclMemAlloc) NCCL_FN(ncclMemFree)
    NCCL_FN(ncclCommRegister) NCCL_FN(ncclCommDeregister) NCCL_FN(ncclRedOpCreatePreMulSum) NCCL_FN(ncclRedOpDestroy)
#undef NCCL_FN
    ncclAllToAllv = reinterpret_cast<AllToAllvFn>(::dlsym(handle, "ncclAllToAllv"));
  }
};
