#include "nccl_comm.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "commbench/sdk/plugin_error.hpp"
#include "nccl_types.h"

cb_comm::cb_comm(cb_backend& b) : backend(b), events(std::make_shared<commbench::nccl_backend::EventPool>()) {}

cb_comm::~cb_comm() {
  using namespace commbench::nccl_backend;
  // Freeing device memory while a kernel may still run on it can hang: a communicator that was
  // neither destroyed nor aborted (an error on the way) is aborted first.
  if (nccl != nullptr && !aborted && !destroyed) abort_once(*this);
  for (auto& [p, type] : allocations) {
    if (type == CB_MEM_HOST_PINNED) cudaFreeHost(p);
    else if (type == CB_MEM_CUDA && backend.options.registration && backend.api.MemFree) backend.api.MemFree(p);
    else if (type == CB_MEM_CUDA) cudaFree(p);
    else std::free(p);
  }
  if (barrier_buffer) cudaFree(barrier_buffer);
  if (stream) cudaStreamDestroy(stream);
}

cb_request::~cb_request() = default;

namespace commbench::nccl_backend {

void abort_once(cb_comm& c) {
  if (c.nccl != nullptr && !c.aborted && !c.destroyed) c.backend.api.CommAbort(c.nccl);
  c.aborted = true;
}

void settle(cb_comm& c, Clock::time_point deadline, const char* what) {
  // A non-blocking communicator finishes each launch on a thread of NCCL's own: polled by sleeping
  // from the start, every op's time would include a sleep (~70-100 µs with the kernel's timer
  // slack) where the GPU waits for the next launch. Spin first, as wait_nccl does; sleep only
  // once the settling has taken long enough (init, a peer that is late) that polling costs more.
  const auto spin_until = Clock::now() + std::chrono::milliseconds(2);
  for (;;) {
    if (c.aborted) sdk::fail(CB_ERR_REMOTE, std::string(what) + ": the communicator was aborted");
    ncclResult_t state = ncclSuccess;
    check_nccl(c.backend.api, c.nccl, "ncclCommGetAsyncError", c.backend.api.CommGetAsyncError(c.nccl, &state));
    if (state != ncclInProgress) {
      if (state != ncclSuccess) {
        // Read the detail before the abort frees the communicator.
        try {
          check_nccl(c.backend.api, c.nccl, what, state);
        } catch (...) {
          abort_once(c);
          throw;
        }
      }
      return;
    }
    if (Clock::now() >= deadline) {
      abort_once(c);
      sdk::fail(CB_ERR_TIMEOUT, std::string(what) + " did not complete within the timeout; communicator aborted");
    }
    if (Clock::now() < spin_until)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

std::unique_ptr<cb_comm> create_nccl_comm(cb_backend& b, int32_t timeout_ms) {
  const auto deadline = timeout_ms < 0 ? Clock::now() + b.options.timeout
                                       : Clock::now() + std::chrono::milliseconds(timeout_ms);
  auto c = std::make_unique<cb_comm>(b);
  check_cuda("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
  check_cuda("cudaMalloc", cudaMalloc(&c->barrier_buffer, sizeof(float)));
  ncclUniqueId id{};
  if (b.host.rank == 0) check_nccl(b.api, nullptr, "ncclGetUniqueId", b.api.GetUniqueId(&id));
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  const cb_status shared = b.host.bootstrap_broadcast(b.host.ctx, &id, sizeof(id), 0,
                                                      static_cast<int32_t>(std::max<int64_t>(left, 1)));
  if (shared != CB_OK)  // keep the host's code: a timeout stays a timeout, a dead peer stays remote
    sdk::fail(shared, "broadcasting the ncclUniqueId through the host's bootstrap failed");
  ncclConfig_t config = make_nccl_config(b.options);
  // On any failure from here on, ~cb_comm aborts whatever ncclCommInitRankConfig created.
  check_nccl(b.api, nullptr, "ncclCommInitRankConfig",
             b.api.CommInitRankConfig(&c->nccl, b.host.world_size, id, b.host.rank, &config));
  settle(*c, deadline, "ncclCommInitRankConfig");
  c->events->reserve(kPrewarmedEvents);  // no cudaEventCreate on a timed path later
  return c;
}

void destroy_nccl_comm(std::unique_ptr<cb_comm> c) {
  const NcclApi& api = c->backend.api;
  if (c->nccl == nullptr || c->aborted) return;
  // A kernel that never finishes (a peer gone) must not hang the teardown: wait with a deadline,
  // then abort. Every stream an op ran on (the core's, usually), not only the communicator's own:
  // ncclCommFinalize would otherwise block on the unfinished op with no deadline at all.
  const auto deadline = Clock::now() + c->backend.options.timeout;
  std::vector<cudaStream_t> streams = c->used_streams;
  if (std::find(streams.begin(), streams.end(), c->stream) == streams.end()) streams.push_back(c->stream);
  for (cudaStream_t s : streams) {
    for (;;) {
      const cudaError_t q = cudaStreamQuery(s);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) check_cuda("cudaStreamQuery", q);
      if (Clock::now() >= deadline) {
        abort_once(*c);
        sdk::fail(CB_ERR_TIMEOUT, "an op of this communicator had not finished on its stream by the teardown "
                                  "deadline (timeout_ms); communicator aborted");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  check_nccl(api, c->nccl, "ncclCommFinalize", api.CommFinalize(c->nccl));
  settle(*c, deadline, "ncclCommFinalize");
  const ncclResult_t r = api.CommDestroy(c->nccl);
  c->destroyed = true;
  check_nccl(api, nullptr, "ncclCommDestroy", r);
}

void abort_nccl_comm(std::unique_ptr<cb_comm> c) { abort_once(*c); }

void* alloc_nccl(cb_comm& c, cb_mem type, size_t bytes) {
  void* p = nullptr;
  if (type == CB_MEM_CUDA) {
    if (c.backend.options.registration) {
      const NcclApi& api = c.backend.api;
      if (!api.MemAlloc || !api.MemFree || !api.CommRegister || !api.CommDeregister)
        sdk::fail(CB_ERR_UNIMPLEMENTED, "registration = on needs ncclMemAlloc and ncclCommRegister (NCCL >= 2.19)");
      if (c.aborted) sdk::fail(CB_ERR_REMOTE, "the communicator was aborted after an earlier error");
      check_nccl(api, c.nccl, "ncclMemAlloc", api.MemAlloc(&p, bytes));
      // Registered as NCCL's user-buffer example does: NCCL may then skip its staging copies (IPC,
      // NVLS, net) for ops on this buffer. NCCL may decline and succeed: a null handle
      // (NCCL_LOCAL_REGISTER=0, P2P through memcpy), or no handle written at all (a buffer with
      // host-memory segments), hence the null start. ncclCommRegister is synchronous, even on a
      // non-blocking communicator.
      void* handle = nullptr;
      const ncclResult_t r = api.CommRegister(c.nccl, p, bytes, &handle);
      if (r != ncclSuccess) {
        api.MemFree(p);
        check_nccl(api, c.nccl, "ncclCommRegister", r);
        sdk::fail(CB_ERR_INTERNAL, "ncclCommRegister returned ncclInProgress, which NCCL does not do for it");
      }
      if (handle != nullptr) c.registered.emplace(p, handle);
    } else {
      check_cuda("cudaMalloc", cudaMalloc(&p, bytes));
    }
  } else if (type == CB_MEM_HOST_PINNED) {
    check_cuda("cudaHostAlloc", cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  } else {
    p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    if (!p) sdk::fail(CB_ERR_RESOURCE_EXHAUSTED, "cannot allocate " + std::to_string(bytes) + " bytes");
  }
  c.allocations.emplace(p, type);
  return p;
}

void free_nccl(cb_comm& c, void* p) {
  const auto it = c.allocations.find(p);
  if (it == c.allocations.end()) sdk::fail(CB_ERR_INVALID_ARGUMENT, "mem_free of a pointer mem_alloc did not return");
  const cb_mem type = it->second;
  c.allocations.erase(it);
  // Deregistered before it is freed (peers may have mapped it); an aborted or destroyed
  // communicator took its registrations with it. The memory is freed even if deregistering fails.
  ncclResult_t deregistered = ncclSuccess;
  if (const auto reg = c.registered.find(p); reg != c.registered.end()) {
    if (c.nccl != nullptr && !c.aborted && !c.destroyed) deregistered = c.backend.api.CommDeregister(c.nccl, reg->second);
    c.registered.erase(reg);
  }
  if (type == CB_MEM_HOST_PINNED) check_cuda("cudaFreeHost", cudaFreeHost(p));
  else if (type == CB_MEM_CUDA && c.backend.options.registration) check_nccl(c.backend.api, nullptr, "ncclMemFree", c.backend.api.MemFree(p));
  else if (type == CB_MEM_CUDA) check_cuda("cudaFree", cudaFree(p));
  else std::free(p);
  check_nccl(c.backend.api, c.nccl, "ncclCommDeregister", deregistered);
}

}  // namespace commbench::nccl_backend
