#include "memory.h"

#include <cstdlib>
#include <string>

#include "errors.h"

namespace commbench::ucx_backend {

MemoryRegistry::~MemoryRegistry() {
  for (auto& [start, region] : regions_) {
    if (region.handle != nullptr) ucp_mem_unmap(context_, region.handle);
    else std::free(const_cast<char*>(start));
  }
}

void* MemoryRegistry::allocate(cb_mem type, size_t bytes) {
  if (type == CB_MEM_HOST_PINNED)
    fail(CB_ERR_UNIMPLEMENTED, "memory type host_pinned is not supported by the ucx plugin "
                               "(use host; registration = \"on\" maps buffers with UCX)");
  if (type == CB_MEM_CUDA && !cuda_)
    fail(CB_ERR_UNIMPLEMENTED, "memory type cuda is not supported: this UCX build's context "
                               "reports no CUDA memory type");
  if (type == CB_MEM_HOST && !registration_) {
    const size_t rounded = (bytes + 4095) / 4096 * 4096;
    void* p = std::aligned_alloc(4096, rounded == 0 ? 4096 : rounded);
    if (p == nullptr) fail(CB_ERR_RESOURCE_EXHAUSTED, "cannot allocate " + std::to_string(bytes) + " bytes");
    regions_.emplace(static_cast<const char*>(p), Region{bytes, nullptr});
    return p;
  }
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS |
                      UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  params.length = bytes == 0 ? 1 : bytes;
  params.flags = UCP_MEM_MAP_ALLOCATE;
  params.memory_type = type == CB_MEM_CUDA ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  ucp_mem_h handle = nullptr;
  check_ucs("ucp_mem_map of " + std::to_string(bytes) + " bytes", ucp_mem_map(context_, &params, &handle));
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  const ucs_status_t s = ucp_mem_query(handle, &attr);
  if (s != UCS_OK) {
    ucp_mem_unmap(context_, handle);
    fail_ucs("ucp_mem_query", s);
  }
  regions_.emplace(static_cast<const char*>(attr.address), Region{attr.length, handle});
  return attr.address;
}

void MemoryRegistry::release(cb_mem /*type*/, void* ptr) {
  const auto it = regions_.find(static_cast<const char*>(ptr));
  if (it == regions_.end())
    fail(CB_ERR_INVALID_ARGUMENT, "mem_free of a pointer mem_alloc did not return");
  if (it->second.handle != nullptr) check_ucs("ucp_mem_unmap", ucp_mem_unmap(context_, it->second.handle));
  else std::free(ptr);
  regions_.erase(it);
}

ucp_mem_h MemoryRegistry::find_region(const void* ptr, size_t bytes) const {
  const char* p = static_cast<const char*>(ptr);
  auto it = regions_.upper_bound(p);
  if (it == regions_.begin()) return nullptr;
  --it;
  const Region& r = it->second;
  return p + bytes <= it->first + r.length ? r.handle : nullptr;
}

}  // namespace commbench::ucx_backend
