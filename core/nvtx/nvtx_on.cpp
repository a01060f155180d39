// NVTX through the CUDA toolkit's nvtx3 headers (header-only; it loads the tool's injection
// library itself when one is configured, and links nothing).
#include <cstdlib>

#include <nvtx3/nvToolsExt.h>

#include "measure/nvtx_ranges.h"

namespace commbench::nvtx {
namespace {

// The injection variable is read once: tools set it before the process starts.
const bool kActive = std::getenv("NVTX_INJECTION64_PATH") != nullptr;

}  // namespace

bool active() { return kActive; }
void push(const char* name) { nvtxRangePushA(name); }
void pop() { nvtxRangePop(); }
const char* build_state() { return "nvtx3"; }

}  // namespace commbench::nvtx
