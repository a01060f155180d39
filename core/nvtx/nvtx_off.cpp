// Built when CMake found no nvtx3 headers (no CUDA toolkit): NVTX ranges are never emitted.
#include "measure/nvtx_ranges.h"

namespace commbench::nvtx {

bool active() { return false; }
void push(const char*) {}
void pop() {}
const char* build_state() { return "not built: no nvtx3 headers (CUDA toolkit) found at build time"; }

}  // namespace commbench::nvtx
