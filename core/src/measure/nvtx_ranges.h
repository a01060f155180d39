// NVTX ranges (issue 13 §2), named like the trace events, so an `nsys` timeline reads like the
// experiment. Built from the CUDA toolkit's header-only nvtx3 when CMake finds it
// (core/nvtx/nvtx_on.cpp), else as no-ops (core/nvtx/nvtx_off.cpp): the core needs no CUDA to build.
// Active only when a tool injects NVTX (nsys and ncu set NVTX_INJECTION64_PATH); otherwise each
// call returns at one flag test, so the timed loop pays nothing measurable.
#pragma once

namespace commbench::nvtx {

bool active();
void push(const char* name);
void pop();
// For metadata: "nvtx3" or why not ("not built: ...").
const char* build_state();

// A range over a scope, when active.
class Range {
 public:
  explicit Range(const char* name) : on_(active()) {
    if (on_) push(name);
  }
  ~Range() {
    if (on_) pop();
  }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  bool on_;
};

}  // namespace commbench::nvtx
