// NCCLX's ncclAllToAllv (only in the NCCLX variant of the simulated library). Counts and displacements
// are in elements, one entry per rank.
#include "api.hpp"

using namespace simgpu;

NCCL_API_EXPORT ncclResult_t ncclAllToAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                                           void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  if (ncclResult_t e = check_comm(comm, "ncclAllToAllv")) return e;
  if (sendcounts == nullptr || sdispls == nullptr || recvcounts == nullptr || rdispls == nullptr)
    return ncclInvalidArgument;
  OpDesc op;
  op.kind = OpKind::AllToAllv;
  op.send = sendbuff;
  op.recv = recvbuff;
  op.dtype = datatype;
  const size_t n = static_cast<size_t>(comm->nranks);
  op.scounts.assign(sendcounts, sendcounts + n);
  op.sdispls.assign(sdispls, sdispls + n);
  op.rcounts.assign(recvcounts, recvcounts + n);
  op.rdispls.assign(rdispls, rdispls + n);
  return submit(comm, std::move(op), stream, "ncclAllToAllv");
}
