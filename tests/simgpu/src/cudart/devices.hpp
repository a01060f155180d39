// Simulated devices: identity (CUDA_VISIBLE_DEVICES mapping, compute capability) and device memory.
// Device memory is handed out from an address range mapped PROT_NONE, so a host access faults like
// it would on a GPU; the library itself reads and writes through a second, private mapping.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

namespace simgpu {

enum class PtrKind { Pageable, Pinned, Registered, Device, BadDevice };

struct PtrInfo {
  PtrKind kind = PtrKind::Pageable;
  int physical = -1;        // owning device (Device only)
  char* view = nullptr;     // where the library may access the bytes
  void* base = nullptr;     // start of the containing allocation (if tracked)
  size_t size = 0;          // its size
};

struct Devices {
  static Devices& get();

  int physical_count() const { return physical_count_; }
  int visible_count() const { return static_cast<int>(visible_.size()); }
  int physical_of(int ordinal) const;   // -1 if not visible
  int ordinal_of(int physical) const;   // -1 if not visible
  unsigned long long memory_per_device() const { return memory_; }
  int cc_major() const { return cc_major_; }
  int cc_minor() const { return cc_minor_; }

  cudaError_t malloc_device(int physical, size_t size, void** out);
  cudaError_t free_device(void* p);  // p must be the start of a live allocation
  void free_all(int physical);
  void mem_info(int physical, size_t* free_bytes, size_t* total);

  cudaError_t malloc_host(size_t size, void** out);
  cudaError_t free_host(void* p);
  cudaError_t register_host(void* p, size_t size);
  cudaError_t unregister_host(void* p);

  // Classifies [p, p+bytes). A range that touches a device region but is not inside one live device
  // allocation is BadDevice; a host range partly inside a tracked host allocation counts as that kind.
  PtrInfo classify(const void* p, size_t bytes);

 private:
  Devices();
  struct Region {
    char* pub = nullptr;   // PROT_NONE: what cudaMalloc hands out
    char* priv = nullptr;  // read/write view used by the library
    size_t size = 0;
    size_t used = 0;
    std::map<size_t, size_t> free_ranges;  // offset -> length, coalesced
  };
  struct HostAlloc {
    size_t size;
    PtrKind kind;
  };
  Region& region(int physical);  // maps lazily; caller holds mu_

  std::mutex mu_;
  int physical_count_ = 8;
  std::vector<int> visible_;
  unsigned long long memory_ = 4ULL << 30;
  int cc_major_ = 9, cc_minor_ = 0;
  std::vector<Region> regions_;
  struct DeviceAlloc {
    size_t size;      // as requested: the bounds accesses are checked against
    size_t reserved;  // rounded up: what the device's accounting counts
  };
  std::map<uintptr_t, DeviceAlloc> device_allocs_;  // pub address -> allocation (all devices)
  std::map<uintptr_t, HostAlloc> host_allocs_;
};

}  // namespace simgpu
