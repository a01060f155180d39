// The buffers of one case, laid out per the ABI's in-place rules, wherever the execution's
// memory plan puts them (common/memory_staging.h):
//  - host memory: from the backend's allocator or the host;
//  - device memory: from the backend's allocator (e.g. ncclMemAlloc) when it has one, else
//    cudaMalloc; checked to fit (cudaMemGetInfo) before allocating;
//  - staged: device buffers holding the data plus pinned host buffers the backend works on.
// Check patterns are written through a host copy and results read back the same way: the core
// never touches device memory from the host. Everything is freed on scope exit.
#pragma once

#include <cstdint>
#include <optional>

#include "common/memory_staging.h"
#include "device/gpu_device.h"
#include "measure/check_pattern.h"
#include "measure/op_executor.h"
#include "plan/plan.h"
#include "plugin/backend_session.h"

namespace commbench {

class CaseBuffers {
 public:
  // Throws PluginError CB_ERR_RESOURCE_EXHAUSTED when the case does not fit in memory.
  CaseBuffers(BackendSession& session, GpuDevice* gpu, const MemoryPlan& plan, const CaseSpec& c,
              int rank, int world);
  ~CaseBuffers();
  CaseBuffers(const CaseBuffers&) = delete;
  CaseBuffers& operator=(const CaseBuffers&) = delete;

  const OpBuffers& bufs() const { return op_; }                // what the backend is handed
  const std::optional<StagingCopies>& staging() const { return staging_; }
  // Device memory these buffers took (cudaMemGetInfo before and after); 0 for host memory.
  uint64_t device_bytes() const { return device_bytes_; }

  // Before a checked iteration: poisons the receive buffer, then writes this rank's check
  // pattern into the send buffer (through host copies for device data).
  void prepare_check(const CheckContext& cc);
  // After it: reads the receive buffer back (device to host for device data) and checks it,
  // then the guard bytes around each buffer and, out of place, that the send buffer is unchanged.
  CheckResult check(const CheckContext& cc);

 private:
  struct Block {
    void* base = nullptr;
    cb_mem mem = CB_MEM_HOST;
    bool from_backend = false;  // freed through the backend's mem_free
    bool pinned = false;        // cudaFreeHost
  };
  // Guard bytes before and after each buffer the backend is handed (check_pattern.h).
  struct Guard {
    void* at = nullptr;
    CheckedBuffer which = CheckedBuffer::kPastRecvEnd;
  };
  // The allocation's address plus `offset` (the front guard); freed by the allocation's address.
  void* allocate(cb_mem mem, size_t bytes, bool core_device, bool pinned, size_t offset);
  void set_guards(void* first, size_t first_bytes, void* second, size_t second_bytes, bool on_device);
  // The send/recv pointers of a layout starting at `base` (and `second` out of place).
  OpBuffers layout(void* base, void* second) const;

  BackendSession& session_;
  GpuDevice* gpu_;
  MemoryPlan plan_;
  const CaseSpec& spec_;
  int rank_, world_;
  size_t elem_size_;
  uint64_t send_elems_ = 0, recv_elems_ = 0;
  std::vector<Block> blocks_;
  OpBuffers op_;        // handed to the backend
  OpBuffers data_;      // where the data lives (== op_ unless staged)
  bool data_on_device_ = false;
  std::optional<StagingCopies> staging_;
  uint64_t device_bytes_ = 0;
  // Before and after the first buffer (send, or the in-place one), then before and after recv.
  Guard guards_[4];
  bool guards_on_device_ = false;
};

}  // namespace commbench
