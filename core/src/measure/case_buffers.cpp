#include "measure/case_buffers.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <vector>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"

namespace commbench {
namespace {

constexpr size_t kAckBytes = 64;
constexpr size_t kPage = 4096;

size_t rounded(size_t bytes) { return std::max<size_t>((bytes + kPage - 1) / kPage * kPage, kPage); }

}  // namespace

CaseBuffers::CaseBuffers(BackendSession& session, GpuDevice* gpu, const MemoryPlan& plan,
                         const CaseSpec& c, int rank, int world)
    : session_(session), gpu_(gpu), plan_(plan), spec_(c), rank_(rank), world_(world),
      elem_size_(sdk::dtype_size(c.dtype)) {
  send_elems_ = send_elements(c.op, c.count, world);
  recv_elems_ = recv_elements(c.op, c.count, world);
  const bool in_place = c.placement == Placement::InPlace;
  const size_t first = (in_place ? std::max(send_elems_, recv_elems_) : send_elems_) * elem_size_;
  const size_t second = in_place ? 0 : recv_elems_ * elem_size_;
  data_on_device_ = plan.requested == CB_MEM_CUDA;
  size_t free_before = 0;
  if (data_on_device_) {
    // Ask first: an allocation that does not fit may fail late (or, with some allocators,
    // succeed and fail the op); a size larger than what is free is skipped on every rank.
    const size_t guards = plan.staged ? 0 : 2 * kGuardBytes;
    const size_t need = rounded(first + guards) + (in_place ? 0 : rounded(second + guards)) + (plan.staged ? 0 : rounded(kAckBytes + 2 * kGuardBytes));
    free_before = gpu_->free_bytes();
    if (need > free_before)
      throw PluginError(CB_ERR_RESOURCE_EXHAUSTED, cuda::kErrorSource, "cudaMemGetInfo",
                        fmt::format("the case needs {} bytes of device memory, {} are free on device {}",
                                    need, free_before, gpu_->index()));
  }
  try {
    // Data buffers: on the device (the backend's allocator or cudaMalloc), or host memory. The
    // buffers the backend is handed lie between guard bytes (check_pattern.h): a backend writing
    // past the count it was given, or before the start, is caught by the check, not left to
    // corrupt the next allocation. A guard is 4 KiB, so the buffers keep their page alignment.
    const size_t data_guard = plan.staged ? 0 : kGuardBytes;
    void* base = allocate(plan.requested, first + 2 * data_guard, plan.staged, false, data_guard);
    void* other = in_place ? nullptr : allocate(plan.requested, second + 2 * data_guard, plan.staged, false, data_guard);
    data_ = layout(base, other);
    if (plan.staged) {
      void* hbase = allocate(CB_MEM_HOST_PINNED, first + 2 * kGuardBytes, false, true, kGuardBytes);
      void* hother = in_place ? nullptr : allocate(CB_MEM_HOST_PINNED, second + 2 * kGuardBytes, false, true, kGuardBytes);
      op_ = layout(hbase, hother);
      op_.ack = allocate(CB_MEM_HOST_PINNED, kAckBytes + 2 * kGuardBytes, false, true, kGuardBytes);
      staging_ = StagingCopies{data_.send, data_.recv, send_elems_ * elem_size_, recv_elems_ * elem_size_};
      set_guards(hbase, first, hother, second, false);
    } else {
      op_ = data_;
      // The p2p patterns' acknowledgements are receives too, with 4 KiB of padding on each side
      // (not checked: the data buffers' guards are): a backend writing before every receive
      // buffer corrupted the heap there (a probe's plugin: "double free or corruption", blamed
      // on the case) instead of failing its data's check.
      op_.ack = allocate(plan.requested, kAckBytes + 2 * kGuardBytes, false, false, kGuardBytes);
      set_guards(base, first, other, second, data_on_device_);
    }
    if (data_on_device_) {
      const size_t free_after = gpu_->free_bytes();
      device_bytes_ = free_before > free_after ? free_before - free_after : 0;
    }
  } catch (...) {
    for (const Block& b : blocks_) {
      try {
        if (b.pinned) gpu_->free_pinned(b.base);
        else if (b.from_backend) session_.free(b.mem, b.base);
        else gpu_->free_device(b.base);
      } catch (...) {}
    }
    throw;
  }
}

CaseBuffers::~CaseBuffers() {
  // Leaving because of an error, device buffers are not freed: a kernel may still use them and
  // cudaFree would wait for it (the worker aborts the communicator and exits next).
  const bool failing = std::uncaught_exceptions() > 0;
  if (gpu_ && !failing) {
    try { gpu_->synchronize(); } catch (...) {}
  }
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    try {  // freeing never fails a measured case
      if (it->pinned) {
        if (!failing) gpu_->free_pinned(it->base);
      } else if (it->from_backend) {
        if (!failing || it->mem != CB_MEM_CUDA) session_.free(it->mem, it->base);
      } else if (!failing) {
        gpu_->free_device(it->base);
      }
    } catch (...) {}
  }
}

void* CaseBuffers::allocate(cb_mem mem, size_t bytes, bool core_device, bool pinned, size_t offset) {
  Block b;
  b.mem = mem;
  if (pinned) {
    b.base = gpu_->alloc_pinned(rounded(bytes));
    b.pinned = true;
  } else if (mem == CB_MEM_CUDA && (core_device || !session_.api().mem_alloc)) {
    b.base = gpu_->alloc_device(rounded(bytes));  // staged data, or a backend without allocator
  } else {
    b.base = session_.alloc(mem, bytes);
    b.from_backend = true;
  }
  blocks_.push_back(b);
  return static_cast<char*>(b.base) + offset;
}

void CaseBuffers::set_guards(void* first, size_t first_bytes, void* second, size_t second_bytes, bool on_device) {
  guards_on_device_ = on_device;
  auto* a = static_cast<char*>(first);
  guards_[0] = {a - kGuardBytes, second ? CheckedBuffer::kBeforeSendStart : CheckedBuffer::kBeforeRecvStart};
  guards_[1] = {a + first_bytes, second ? CheckedBuffer::kPastSendEnd : CheckedBuffer::kPastRecvEnd};
  if (!second) return;
  auto* b = static_cast<char*>(second);
  guards_[2] = {b - kGuardBytes, CheckedBuffer::kBeforeRecvStart};
  guards_[3] = {b + second_bytes, CheckedBuffer::kPastRecvEnd};
}

OpBuffers CaseBuffers::layout(void* base, void* second) const {
  OpBuffers o;
  if (!second) {  // in place: the ABI's offsets (cb_op_args), pointer arithmetic only
    const size_t block = static_cast<size_t>(spec_.count) * elem_size_ * static_cast<size_t>(rank_);
    auto* p = static_cast<char*>(base);
    o.send = o.recv = base;
    if (spec_.op == OpKind::Allgather || spec_.op == OpKind::Gather) o.send = p + block;
    if (spec_.op == OpKind::Reducescatter || spec_.op == OpKind::Scatter) o.recv = p + block;
  } else {
    o.send = base;
    o.recv = second;
  }
  return o;
}

void CaseBuffers::prepare_check(const CheckContext& cc) {
  std::vector<unsigned char> guard(kGuardBytes);
  fill_guard(guard.data(), guard.size(), cc.generation);
  for (const Guard& g : guards_) {
    if (!g.at) continue;
    if (guards_on_device_) gpu_->copy_to_device_on_stream(g.at, guard.data(), guard.size());
    else std::memcpy(g.at, guard.data(), guard.size());
  }
  // Staged data: the backend works on the pinned copies, which still hold the last result.
  if (staging_) poison_recv(cc, op_.recv, recv_elems_);
  if (!data_on_device_) {
    poison_recv(cc, data_.recv, recv_elems_);
    fill_send(cc, data_.send, send_elems_);  // after the poison: in place, the input lies inside
    return;
  }
  std::vector<unsigned char> recv(recv_elems_ * elem_size_), send(send_elems_ * elem_size_);
  poison_recv(cc, recv.data(), recv_elems_);
  fill_send(cc, send.data(), send_elems_);
  // On the worker's stream, which the ops run on: it orders the upload after earlier work and the
  // next op after the upload (a plain cudaMemcpy would run on the legacy stream, unordered with
  // ours, and may return before a pageable copy has landed).
  gpu_->copy_to_device_on_stream(data_.recv, recv.data(), recv.size());
  gpu_->copy_to_device_on_stream(data_.send, send.data(), send.size());
}

CheckResult CaseBuffers::check(const CheckContext& cc) {
  CheckResult r;
  if (!data_on_device_) {
    r = check_recv(cc, data_.recv, recv_elems_);
  } else {
    std::vector<unsigned char> host(recv_elems_ * elem_size_);
    gpu_->copy_to_host_on_stream(host.data(), data_.recv, host.size());
    r = check_recv(cc, host.data(), recv_elems_);
  }
  // What the backend was handed beyond its receive buffer: the guards, and out of place the send
  // buffer, which must still hold the input (staged: the pinned copy the backend read).
  std::vector<unsigned char> host;
  const auto readable = [&](const void* at, size_t bytes, bool on_device) -> const void* {
    if (!on_device) return at;
    host.resize(bytes);
    gpu_->copy_to_host_on_stream(host.data(), at, bytes);
    return host.data();
  };
  for (const Guard& g : guards_)
    if (g.at) merge_check(r, check_guard(readable(g.at, kGuardBytes, guards_on_device_), kGuardBytes, elem_size_, g.which,
                                               cc.generation));
  if (guards_[2].at)  // out of place
    merge_check(r, check_send_unchanged(cc, readable(op_.send, send_elems_ * elem_size_, guards_on_device_), send_elems_));
  return r;
}

}  // namespace commbench
