// The scenarios of simgpu_nccl_rank (nccl_rank_main.cpp) about faults and refusals: mismatched
// calls, a GPU taken twice, abort, injected init/async failures and hangs, a peer that exits,
// communicator memory, one-rank and fp8 limits. Each prints what failed and exits 1 (rank_util::fail).
#pragma once

#include <cuda_runtime_api.h>

#include "nccl_rank_api.hpp"

namespace rank_faults {

void mismatch(const ncclUniqueId& id, cudaStream_t s);
void duplicate_gpu(const ncclUniqueId& id);
void abort_then_use(const ncclUniqueId& id, cudaStream_t s);
void fault_init(const ncclUniqueId& id);
void fault_async(const ncclUniqueId& id, cudaStream_t s);
void fault_hang(const ncclUniqueId& id, cudaStream_t s);
void peer_exit(const ncclUniqueId& id, cudaStream_t s);
void comm_memory(const ncclUniqueId& id, cudaStream_t s);
void single_rank(const ncclUniqueId& id, cudaStream_t s);
void fp8_needs_sm90(const ncclUniqueId& id, cudaStream_t s);
void fp8_avg_one_rank(const ncclUniqueId& id, cudaStream_t s);

}  // namespace rank_faults
