// Shared pieces of the exported NCCL entry points.
#pragma once

#include <nccl.h>

#include "comm.hpp"

#define NCCL_API_EXPORT extern "C" __attribute__((visibility("default")))

struct ncclComm : simgpu::Comm {};  // ncclComm_t is a pointer to this

namespace simgpu {

ncclResult_t check_comm(Comm* c, const char* fn);
// NCCL's ncclCommEnsureReady: a communicator whose last non-blocking call has not reported ncclSuccess
// yet is refused with ncclInvalidArgument ("Attempt to use communicator before the previous operation
// returned ncclSuccess"), which non-blocking communicators also take as their async error; one with an
// async error returns that error.
ncclResult_t ensure_ready(Comm& c);
ncclResult_t comm_init(ncclComm_t* out, int nranks, ncclUniqueId id, int rank, const ncclConfig_t* config);
void wait_quiet(Comm& c);
int group_depth();
extern thread_local std::vector<Comm*> t_group_inits;

// Validates and enqueues (or, inside a group, collects) one op. The NCCLX variant's ncclAllToAllv uses it too.
ncclResult_t submit(ncclComm_t comm, OpDesc op, cudaStream_t stream, const char* fn);

}  // namespace simgpu
