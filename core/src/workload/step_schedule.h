// What one data-parallel training step does, in order (docs/workloads.md, "A step"): compute per
// layer, and the collectives DDP or FSDP issue around it, posted and waited as the overlap
// setting says. Pure data, built once per case and played by the step runner
// (workload/step_runner.h) with and without its compute or its communication.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/ops.h"
#include "workload/model.h"
#include "workload/workload_kind.h"

namespace commbench::workload {

// A DDP gradient bucket: layers in the order their gradients become ready (reverse), and the
// slice of the flat gradient buffer they occupy.
struct Bucket {
  std::vector<int> layers;     // descending layer index
  uint64_t first_element = 0;  // offset in the flat gradient buffer (forward order)
  uint64_t elements = 0;
};

// torch DDP's rule: parameters in reverse order fill a bucket until it holds at least `cap_bytes`;
// a layer is never split (one larger than the cap is a bucket of its own). Layers without
// parameters join the bucket being filled. Every layer with parameters is in exactly one bucket.
std::vector<Bucket> ddp_buckets(const Model& m, size_t elem_size, uint64_t cap_bytes);

// One collective of the step, with its place in the flat buffers (in elements).
struct CommOp {
  OpKind op = OpKind::Allreduce;
  uint64_t count = 0;        // ABI count: allreduce elements; allgather/reducescatter per-rank shard
  uint64_t send_offset = 0;  // elements into the step's send buffer
  uint64_t recv_offset = 0;  // elements into the step's receive buffer
  std::string what;          // "bucket 0 (layers 53..50)", "allgather fc (forward)"
};

enum class ActionKind { Compute, Post, Wait };

struct StepAction {
  ActionKind kind = ActionKind::Compute;
  int index = 0;          // Compute: layer; Post/Wait: comm
  bool backward = false;  // Compute only
  double share = 0;       // Compute only: fraction of the step's compute time (all shares sum to 1)
};

struct StepPlan {
  std::vector<CommOp> comms;
  std::vector<StepAction> actions;
  uint64_t send_elements = 0;  // buffer sizes the comms need, per rank
  uint64_t recv_elements = 0;
  // Bytes this rank hands to the backend per step (sum over comms of the send size).
  uint64_t comm_bytes = 0;
};

// DDP: forward all layers, backward in reverse; each bucket's allreduce posted once its last layer
// (lowest index) is done (overlap) or all posted and waited one by one after backward (no
// overlap). FSDP: per layer, an allgather of the parameters (shard = ceil(params / world)) before
// forward and again before backward, a reducescatter of the gradients after backward; with
// overlap the next layer's allgather is posted before the current layer computes (prefetch) and
// reducescatters are waited at the end, without it every collective is waited where posted.
// Compute shares: each layer's FLOPs (forward ⅓, backward ⅔ = 2× forward); even when the model
// gives no FLOPs.
StepPlan plan_step(const Model& m, Sharding sharding, bool overlap, uint64_t bucket_bytes, size_t elem_size,
                   int world);

}  // namespace commbench::workload
