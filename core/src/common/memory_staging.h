// Where an execution's buffers live and what the backend is handed, from the memory the run asks
// for and the backend's capabilities. One rule, used by validation and by the worker:
//  - the backend supports the memory type: it gets that memory directly;
//  - memory = "cuda" and the backend has host memory only and is not stream-ordered (Gloo, UCX
//    built without CUDA): the data lives in device buffers and every iteration stages it through
//    pinned host buffers, the copies inside the timed region, as torch.distributed's Gloo does
//    with CUDA tensors (docs/gpu.md, "Staging");
//  - otherwise the backend cannot run this memory type.
#pragma once

#include "commbench/backend.h"

namespace commbench {

struct MemoryPlan {
  cb_mem requested = CB_MEM_HOST;  // the run's memory
  cb_mem op_memory = CB_MEM_HOST;  // what cb_op_args.mem_type and the buffers handed over are
  bool staged = false;             // device data copied through pinned host buffers per iteration
  bool usable = false;             // false: the backend cannot run this memory type at all
};

inline MemoryPlan plan_memory(const cb_capabilities& caps, cb_mem requested) {
  MemoryPlan p;
  p.requested = p.op_memory = requested;
  if (caps.mem_types & CB_BIT(requested)) {
    p.usable = true;
    return p;
  }
  if (requested == CB_MEM_CUDA && (caps.mem_types & CB_BIT(CB_MEM_HOST)) &&
      !(caps.flags & CB_CAP_STREAM_ORDERED)) {
    p.op_memory = CB_MEM_HOST;
    p.staged = p.usable = true;
  }
  return p;
}

// The record's `staging` field: "host_pinned" when staged, "" (absent) otherwise.
inline const char* staging_name(const MemoryPlan& p) { return p.staged ? "host_pinned" : ""; }

}  // namespace commbench
