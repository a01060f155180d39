// A simulated NCCL communicator: its shared segment, its state (async error, abort, finalize) and the
// registry that makes a freed or aborted handle detectable.
#pragma once

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "dtypes.hpp"
#include "shm.hpp"

namespace simgpu {

enum class OpKind : int {
  AllReduce = 1, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, Gather, Scatter, AllToAllv, Send, Recv
};
const char* op_name(OpKind k);

struct OpDesc {
  OpKind kind{};
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t dtype = ncclInt8;
  ncclRedOp_t redop = ncclSum;
  int root = 0;  // or peer
  std::vector<size_t> scounts, sdispls, rcounts, rdispls;  // alltoallv
  bool is_p2p() const { return kind == OpKind::Send || kind == OpKind::Recv; }
};

struct Comm {
  int rank = 0, nranks = 0, cuda_dev = 0, physical = 0;
  bool blocking = true;
  std::string shm_name;
  char* base = nullptr;
  size_t map_size = 0;
  ShmHeader* shm = nullptr;
  ShmLayout layout{};

  std::mutex mu;  // guards the fields below it
  std::condition_variable cv;
  std::atomic<int> async{ncclSuccess};
  std::atomic<bool> aborting{false};
  bool dead = false;
  bool finalized = false;
  int running = 0;   // ops executing on a stream right now
  int inflight = 0;  // ops launched (queued or running) and not finished
  std::map<int, Reduction> custom_ops;
  int next_op = ncclNumOps;
  std::map<void*, std::pair<const char*, size_t>> registrations;  // handle -> registered range
  // SIMGPU_NCCL_COMM_MEMORY: device memory the communicator holds from its first op (NCCL >= 2.22
  // connects peers and allocates their buffers at run time, NCCL_RUNTIME_CONNECT=1) to destroy/abort.
  void* reserved = nullptr;
  bool connected = false;

  std::mutex exec_mu;  // one op of this communicator executes at a time
  uint64_t coll_seq = 0, barriers = 0, ops_executed = 0;
  std::vector<uint64_t> send_seq, recv_seq;

  // Sets the async error unless one is already there (ncclInProgress/ncclSuccess are overwritten).
  void set_error(ncclResult_t e);
};

// Live handles; anything else passed in is a use after free (or garbage).
bool comm_live(Comm* c);
// The rank of a live communicator that still has `p` inside a registered range, or -1.
int registered_by(const void* p);
void comm_register(Comm* c);
void comm_unregister(Comm* c);

// ncclGetLastError text: the last failure of any communicator in this process.
void set_last_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string last_error();

// Settings.
double watchdog_seconds();
int launch_delay_ms();

}  // namespace simgpu
