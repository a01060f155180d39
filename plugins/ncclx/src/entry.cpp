// The ncclx plugin: an NCCL-API library chosen at run time — Meta's NCCLX (a superset of NCCL,
// also called libnccl.so) or any other NCCL build — loaded with dlopen and resolved with dlsym.
// Which library: the option `library`, else COMMBENCH_NCCLX_LIBRARY, else "libnccl.so.2" from
// the loader's search path. Everything else is shared with the nccl plugin.
#include <cstdlib>

#include "nccl_plugin.h"

#ifndef COMMBENCH_NCCLX_PLUGIN_VERSION
#define COMMBENCH_NCCLX_PLUGIN_VERSION "0.0.0"
#endif

namespace {

using namespace commbench::nccl_backend;

struct RuntimeNccl {
  static constexpr const char* name = "ncclx";
  static constexpr const char* plugin_version = COMMBENCH_NCCLX_PLUGIN_VERSION;
  static constexpr const char* description =
      "NCCLX or any NCCL-API library chosen at run time (dlopen): NCCL ops plus detected extensions";
  static constexpr int static_version = 22400;  // what the capabilities assume before init
  static constexpr const auto& options = kNcclxOptionTable;  // exported as the ABI 1.2 descriptors
  static NcclApi load(const NcclOptions& o) {
    std::string path = o.library;
    if (path.empty())
      if (const char* env = std::getenv("COMMBENCH_NCCLX_LIBRARY")) path = env;
    if (path.empty()) path = "libnccl.so.2";
    return load_nccl_api(path);
  }
};

}  // namespace

extern "C" CB_EXPORT const cb_backend_api* commbench_backend_v1(void) { return &NcclPlugin<RuntimeNccl>::api; }
