#include "devices.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "../common/knobs.hpp"

namespace simgpu {
namespace {

constexpr size_t kAlign = 256;  // cudaMalloc's guaranteed alignment
size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

// Real cudaMalloc memory holds garbage; fresh pages here would read as zeros and hide a missing upload.
// Fill with 0xFF (NaN for floats, -1 for signed integers): all of it up to 64 MiB, else the first 64 MiB
// and the last 1 MiB, so huge allocations (fit probes) do not commit host memory.
void poison(char* p, size_t size) {
  static const bool on = env_int("SIMGPU_POISON", 1) != 0;
  if (!on) return;
  constexpr size_t kHead = 64 << 20, kTail = 1 << 20;
  std::memset(p, 0xff, size < kHead ? size : kHead);
  if (size > kHead) std::memset(p + size - kTail, 0xff, kTail);
}

}  // namespace

Devices& Devices::get() {
  static Devices* d = new Devices();  // never destroyed: stream threads may outlive static destructors
  return *d;
}

Devices::Devices() {
  physical_count_ = static_cast<int>(env_int("SIMGPU_DEVICE_COUNT", 8));
  if (physical_count_ < 0) physical_count_ = 0;
  memory_ = parse_bytes(env("SIMGPU_DEVICE_MEMORY"), 4ULL << 30);
  memory_ = round_up(memory_, 1 << 20);
  if (const char* cc = env("SIMGPU_COMPUTE_CAPABILITY")) {
    int ma = 0, mi = 0;
    if (std::sscanf(cc, "%d.%d", &ma, &mi) >= 1 && ma > 0) {
      cc_major_ = ma;
      cc_minor_ = mi;
    }
  }
  // CUDA_VISIBLE_DEVICES: comma-separated physical indices; like CUDA, the list ends at the first
  // invalid entry, and an empty value hides every device.
  const char* vis = std::getenv("CUDA_VISIBLE_DEVICES");
  if (vis == nullptr) {
    for (int i = 0; i < physical_count_; ++i) visible_.push_back(i);
  } else {
    std::string s(vis);
    size_t pos = 0;
    while (pos < s.size()) {
      size_t comma = s.find(',', pos);
      std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      char* end = nullptr;
      long v = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || end == item.c_str() || v < 0 || v >= physical_count_) break;
      bool dup = false;
      for (int x : visible_) dup = dup || (x == v);
      if (dup) break;
      visible_.push_back(static_cast<int>(v));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  regions_.resize(static_cast<size_t>(physical_count_));
  SIMGPU_LOG("cudart: %d physical devices, %d visible, %llu bytes each, cc %d.%d", physical_count_,
             visible_count(), memory_, cc_major_, cc_minor_);
}

int Devices::physical_of(int ordinal) const {
  return (ordinal >= 0 && ordinal < visible_count()) ? visible_[static_cast<size_t>(ordinal)] : -1;
}

int Devices::ordinal_of(int physical) const {
  for (size_t i = 0; i < visible_.size(); ++i)
    if (visible_[i] == physical) return static_cast<int>(i);
  return -1;
}

Devices::Region& Devices::region(int physical) {
  Region& r = regions_[static_cast<size_t>(physical)];
  if (r.pub == nullptr) {
    r.size = memory_;
    void* pub = ::mmap(nullptr, r.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void* priv = ::mmap(nullptr, r.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                        -1, 0);
    if (pub == MAP_FAILED || priv == MAP_FAILED) {
      std::fprintf(stderr, "simgpu: cannot reserve %zu bytes of address space for device %d\n", r.size, physical);
      std::abort();
    }
    r.pub = static_cast<char*>(pub);
    r.priv = static_cast<char*>(priv);
    r.free_ranges[0] = r.size;
  }
  return r;
}

cudaError_t Devices::malloc_device(int physical, size_t size, void** out) {
  std::lock_guard<std::mutex> lk(mu_);
  Region& r = region(physical);
  const size_t need = round_up(size == 0 ? 1 : size, kAlign);
  for (auto it = r.free_ranges.begin(); it != r.free_ranges.end(); ++it) {
    if (it->second < need) continue;
    const size_t off = it->first, len = it->second;
    r.free_ranges.erase(it);
    if (len > need) r.free_ranges[off + need] = len - need;
    r.used += need;
    poison(r.priv + off, size);
    *out = r.pub + off;
    device_allocs_[reinterpret_cast<uintptr_t>(r.pub + off)] = DeviceAlloc{size, need};
    return cudaSuccess;
  }
  return cudaErrorMemoryAllocation;
}

cudaError_t Devices::free_device(void* p) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = device_allocs_.find(reinterpret_cast<uintptr_t>(p));
  if (it == device_allocs_.end()) return cudaErrorInvalidValue;
  const size_t len = it->second.reserved;
  device_allocs_.erase(it);
  for (Region& r : regions_) {
    if (r.pub == nullptr || static_cast<char*>(p) < r.pub || static_cast<char*>(p) >= r.pub + r.size) continue;
    size_t off = static_cast<size_t>(static_cast<char*>(p) - r.pub);
    ::madvise(r.priv + off, len, MADV_DONTNEED);  // give the pages back; next user sees zeros
    r.used -= len;
    size_t start = off, length = len;
    auto next = r.free_ranges.lower_bound(off);
    if (next != r.free_ranges.end() && next->first == off + len) {
      length += next->second;
      next = r.free_ranges.erase(next);
    }
    if (next != r.free_ranges.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == off) {
        start = prev->first;
        length += prev->second;
        r.free_ranges.erase(prev);
      }
    }
    r.free_ranges[start] = length;
    return cudaSuccess;
  }
  return cudaErrorInvalidValue;
}

void Devices::free_all(int physical) {
  std::vector<void*> mine;
  {
    std::lock_guard<std::mutex> lk(mu_);
    Region& r = regions_[static_cast<size_t>(physical)];
    if (r.pub == nullptr) return;
    for (auto& [addr, alloc] : device_allocs_) {
      char* p = reinterpret_cast<char*>(addr);
      if (p >= r.pub && p < r.pub + r.size) mine.push_back(p);
    }
  }
  for (void* p : mine) free_device(p);
}

void Devices::mem_info(int physical, size_t* free_bytes, size_t* total) {
  std::lock_guard<std::mutex> lk(mu_);
  const Region& r = regions_[static_cast<size_t>(physical)];
  if (total != nullptr) *total = memory_;
  if (free_bytes != nullptr) *free_bytes = memory_ - r.used;
}

cudaError_t Devices::malloc_host(size_t size, void** out) {
  void* p = nullptr;
  if (::posix_memalign(&p, 4096, round_up(size == 0 ? 1 : size, 4096)) != 0) return cudaErrorMemoryAllocation;
  std::lock_guard<std::mutex> lk(mu_);
  host_allocs_[reinterpret_cast<uintptr_t>(p)] = HostAlloc{size, PtrKind::Pinned};
  *out = p;
  return cudaSuccess;
}

cudaError_t Devices::free_host(void* p) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = host_allocs_.find(reinterpret_cast<uintptr_t>(p));
    if (it == host_allocs_.end() || it->second.kind != PtrKind::Pinned) return cudaErrorInvalidValue;
    host_allocs_.erase(it);
  }
  std::free(p);
  return cudaSuccess;
}

cudaError_t Devices::register_host(void* p, size_t size) {
  if (p == nullptr || size == 0) return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> lk(mu_);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = host_allocs_.upper_bound(a + size - 1);
  if (it != host_allocs_.begin()) {
    --it;
    if (it->first + it->second.size > a) return cudaErrorHostMemoryAlreadyRegistered;
  }
  host_allocs_[a] = HostAlloc{size, PtrKind::Registered};
  return cudaSuccess;
}

cudaError_t Devices::unregister_host(void* p) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = host_allocs_.find(reinterpret_cast<uintptr_t>(p));
  if (it == host_allocs_.end() || it->second.kind != PtrKind::Registered) return cudaErrorHostMemoryNotRegistered;
  host_allocs_.erase(it);
  return cudaSuccess;
}

PtrInfo Devices::classify(const void* p, size_t bytes) {
  PtrInfo info;
  const char* c = static_cast<const char*>(p);
  std::lock_guard<std::mutex> lk(mu_);
  for (size_t phys = 0; phys < regions_.size(); ++phys) {
    const Region& r = regions_[phys];
    if (r.pub == nullptr) continue;
    const bool starts_in = c >= r.pub && c < r.pub + r.size;
    const bool ends_in = bytes > 0 && c < r.pub && c + bytes > r.pub;
    if (!starts_in && !ends_in) continue;
    info.kind = PtrKind::BadDevice;
    info.physical = static_cast<int>(phys);
    if (!starts_in) return info;
    auto it = device_allocs_.upper_bound(reinterpret_cast<uintptr_t>(c));
    if (it == device_allocs_.begin()) return info;
    --it;
    const char* base = reinterpret_cast<const char*>(it->first);
    const size_t size = it->second.size;
    if (c + bytes > base + size || (bytes == 0 && c > base + size) || (bytes > 0 && c >= base + size)) return info;
    info.kind = PtrKind::Device;
    info.view = r.priv + (c - r.pub);
    info.base = const_cast<char*>(base);
    info.size = size;
    return info;
  }
  info.view = const_cast<char*>(c);
  auto it = host_allocs_.upper_bound(reinterpret_cast<uintptr_t>(c));
  if (it != host_allocs_.begin()) {
    --it;
    if (it->first + it->second.size > reinterpret_cast<uintptr_t>(c)) {
      info.kind = it->second.kind;
      info.base = reinterpret_cast<void*>(it->first);
      info.size = it->second.size;
    }
  }
  return info;
}

}  // namespace simgpu
