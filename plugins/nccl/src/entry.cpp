// The nccl plugin: the NCCL found at configure time, linked. Everything but where the API table
// comes from is shared with ncclx (plugins/nccl_common).
#include <dlfcn.h>
#include <nccl.h>

#include "nccl_plugin.h"

#ifndef COMMBENCH_NCCL_PLUGIN_VERSION
#define COMMBENCH_NCCL_PLUGIN_VERSION "0.0.0"
#endif

namespace {

using namespace commbench::nccl_backend;

struct LinkedNccl {
  static constexpr const char* name = "nccl";
  static constexpr const char* plugin_version = COMMBENCH_NCCL_PLUGIN_VERSION;
  static constexpr const char* description = "NVIDIA NCCL (linked at build time): collectives and send/recv on CUDA memory";
  static constexpr int static_version = NCCL_VERSION_CODE;
  static constexpr const auto& options = kNcclOptionTable;  // exported as the ABI 1.2 descriptors
  static NcclApi load(const NcclOptions&) {
    NcclApi a;
    // Which file the loader picked (a pip wheel's, a system one): the metadata names it.
    Dl_info where{};
    const bool found = ::dladdr(reinterpret_cast<void*>(&ncclGetVersion), &where) != 0 && where.dli_fname;
    a.library = std::string(found ? where.dli_fname : "libnccl.so." + std::to_string(NCCL_MAJOR)) +
                " (linked, built against " + version_string(NCCL_VERSION_CODE) + ")";
    a.linked = true;
    a.GetVersion = ncclGetVersion;
    a.GetErrorString = ncclGetErrorString;
    a.GetLastError = ncclGetLastError;
    a.GetUniqueId = ncclGetUniqueId;
    a.CommInitRankConfig = ncclCommInitRankConfig;
    a.CommDestroy = ncclCommDestroy;
    a.CommFinalize = ncclCommFinalize;
    a.CommAbort = ncclCommAbort;
    a.CommGetAsyncError = ncclCommGetAsyncError;
    a.AllReduce = ncclAllReduce;
    a.AllGather = ncclAllGather;
    a.ReduceScatter = ncclReduceScatter;
    a.Broadcast = ncclBroadcast;
    a.Reduce = ncclReduce;
    a.Send = ncclSend;
    a.Recv = ncclRecv;
    a.GroupStart = ncclGroupStart;
    a.GroupEnd = ncclGroupEnd;
    // Newer than NCCL 2.14 (2.19: buffer registration; 2.28: alltoall, gather, scatter): looked up
    // in the loaded library, not linked, so that the plugin loads against an older NCCL (a pip
    // wheel of 2.27, say) and uses grouped send/recv where these are missing.
    if (void* lib = found ? ::dlopen(where.dli_fname, RTLD_NOW | RTLD_NOLOAD) : nullptr) {
      resolve_optional_nccl_symbols(lib, a);
      ::dlclose(lib);  // only drops the reference NOLOAD took; the plugin's link keeps it loaded
    }
    return a;
  }
};

}  // namespace

// Pure: returns a constant table; initialises nothing (CUDA and NCCL are first touched in init()).
extern "C" CB_EXPORT const cb_backend_api* commbench_backend_v1(void) { return &NcclPlugin<LinkedNccl>::api; }
