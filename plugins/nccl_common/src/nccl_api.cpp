#include "nccl_api.h"

#include <dlfcn.h>
#include <unistd.h>

#include "commbench/sdk/plugin_error.hpp"

namespace commbench::nccl_backend {
namespace {

template <class F>
void resolve(void* handle, const char* name, F& out, bool required, const std::string& path) {
  out = reinterpret_cast<F>(::dlsym(handle, name));
  if (out == nullptr && required)
    sdk::fail(CB_ERR_INVALID_ARGUMENT, path + " lacks " + name + ": it is not an NCCL-API library "
                                       "(or one older than NCCL 2.14, which commbench needs)");
}

}  // namespace

NcclApi load_nccl_api(const std::string& path) {
  // A path the user wrote out that names no file is a mistake to fix, not a host without NCCL
  // (a bare soname the loader cannot find is that: unavailable).
  if (path.find('/') != std::string::npos && ::access(path.c_str(), F_OK) != 0)
    sdk::fail(CB_ERR_INVALID_ARGUMENT, "the NCCL library " + path + " does not exist: correct the ncclx option "
                                       "library or COMMBENCH_NCCLX_LIBRARY");
  void* h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* why = ::dlerror();
    sdk::fail(CB_ERR_UNAVAILABLE, "cannot load the NCCL library " + path + ": " + (why ? why : "dlopen failed") +
                                      " (set the ncclx option library or COMMBENCH_NCCLX_LIBRARY to its path)");
  }
  NcclApi a;
  a.library = path;
  resolve(h, "ncclGetVersion", a.GetVersion, true, path);
  resolve(h, "ncclGetErrorString", a.GetErrorString, true, path);
  resolve(h, "ncclGetLastError", a.GetLastError, false, path);
  resolve(h, "ncclGetUniqueId", a.GetUniqueId, true, path);
  resolve(h, "ncclCommInitRankConfig", a.CommInitRankConfig, true, path);
  resolve(h, "ncclCommDestroy", a.CommDestroy, true, path);
  resolve(h, "ncclCommFinalize", a.CommFinalize, true, path);
  resolve(h, "ncclCommAbort", a.CommAbort, true, path);
  resolve(h, "ncclCommGetAsyncError", a.CommGetAsyncError, true, path);
  resolve(h, "ncclAllReduce", a.AllReduce, true, path);
  resolve(h, "ncclAllGather", a.AllGather, true, path);
  resolve(h, "ncclReduceScatter", a.ReduceScatter, true, path);
  resolve(h, "ncclBroadcast", a.Broadcast, true, path);
  resolve(h, "ncclReduce", a.Reduce, true, path);
  resolve(h, "ncclSend", a.Send, true, path);
  resolve(h, "ncclRecv", a.Recv, true, path);
  resolve(h, "ncclGroupStart", a.GroupStart, true, path);
  resolve(h, "ncclGroupEnd", a.GroupEnd, true, path);
  resolve_optional_nccl_symbols(h, a);
  return a;
}

void resolve_optional_nccl_symbols(void* h, NcclApi& a) {
  resolve(h, "ncclAlltoAll", a.AlltoAll, false, a.library);
  resolve(h, "ncclGather", a.Gather, false, a.library);
  resolve(h, "ncclScatter", a.Scatter, false, a.library);
  resolve(h, "ncclMemAlloc", a.MemAlloc, false, a.library);
  resolve(h, "ncclMemFree", a.MemFree, false, a.library);
  resolve(h, "ncclCommRegister", a.CommRegister, false, a.library);
  resolve(h, "ncclCommDeregister", a.CommDeregister, false, a.library);
  resolve(h, "ncclAllToAllv", a.AllToAllv, false, a.library);
}

std::string version_string(int code) {
  const int major = code / 10000, minor = (code % 10000) / 100, patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace commbench::nccl_backend
