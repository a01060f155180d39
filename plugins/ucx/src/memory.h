// Buffers for the core (mem_alloc/mem_free). With registration on they come from ucp_mem_map,
// and every send/recv inside them passes its memory handle to UCX, so the timed loop never pays
// for registration; with it off they are plain page-aligned host memory, as the core would use.
#pragma once

#include <cstddef>
#include <map>

#include <ucp/api/ucp.h>

#include "commbench/backend.h"

namespace commbench::ucx_backend {

class MemoryRegistry {
 public:
  MemoryRegistry(ucp_context_h context, bool registration, bool cuda)
      : context_(context), registration_(registration), cuda_(cuda) {}
  ~MemoryRegistry();
  MemoryRegistry(const MemoryRegistry&) = delete;
  MemoryRegistry& operator=(const MemoryRegistry&) = delete;

  void* allocate(cb_mem type, size_t bytes);
  void release(cb_mem type, void* ptr);
  // The handle of the registered region that holds [ptr, ptr+bytes), or nullptr. Inline up to
  // the lookup: every message asks, and with registration off (the default) that is all.
  ucp_mem_h find(const void* ptr, size_t bytes) const {
    return registration_ && !regions_.empty() ? find_region(ptr, bytes) : nullptr;
  }

 private:
  ucp_mem_h find_region(const void* ptr, size_t bytes) const;
  struct Region {
    size_t length;
    ucp_mem_h handle;  // nullptr: plain host memory from aligned_alloc
  };
  ucp_context_h context_;
  bool registration_;
  bool cuda_;
  std::map<const char*, Region> regions_;  // by start address
};

}  // namespace commbench::ucx_backend
