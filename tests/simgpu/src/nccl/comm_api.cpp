// Exported NCCL entry points: versions, errors, unique ids, communicator life cycle.
#include <pthread.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdarg>
#include <cstring>
#include <thread>

#include "../common/knobs.hpp"
#include "../common/simgpu_private.h"
#include "api.hpp"
#include "transport.hpp"

namespace simgpu {
namespace {

std::mutex g_registry_mu;
std::set<Comm*>& registry() {
  static auto* s = new std::set<Comm*>();
  return *s;
}
std::mutex g_error_mu;
std::string& error_text() {
  static auto* s = new std::string();
  return *s;
}

bool nccl_debug_warn() {
  const char* d = env("NCCL_DEBUG");
  return log_enabled() || (d != nullptr && (strcasecmp(d, "WARN") == 0 || strcasecmp(d, "INFO") == 0 ||
                                            strcasecmp(d, "TRACE") == 0));
}

}  // namespace

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::AllReduce: return "AllReduce";
    case OpKind::AllGather: return "AllGather";
    case OpKind::ReduceScatter: return "ReduceScatter";
    case OpKind::Broadcast: return "Broadcast";
    case OpKind::Reduce: return "Reduce";
    case OpKind::AllToAll: return "AlltoAll";
    case OpKind::Gather: return "Gather";
    case OpKind::Scatter: return "Scatter";
    case OpKind::AllToAllv: return "AllToAllv";
    case OpKind::Send: return "Send";
    case OpKind::Recv: return "Recv";
  }
  return "?";
}

void Comm::set_error(ncclResult_t e) {
  int cur = async.load();
  while ((cur == ncclSuccess || cur == ncclInProgress) && !async.compare_exchange_weak(cur, e)) {
  }
}

bool comm_live(Comm* c) {
  std::lock_guard<std::mutex> lk(g_registry_mu);
  return registry().count(c) != 0;
}
int registered_by(const void* p) {
  std::lock_guard<std::mutex> lk(g_registry_mu);
  const char* at = static_cast<const char*>(p);
  for (Comm* c : registry()) {
    std::lock_guard<std::mutex> clk(c->mu);
    for (const auto& [h, range] : c->registrations)
      if (at >= range.first && at < range.first + range.second) return c->rank;
  }
  return -1;
}
void comm_register(Comm* c) {
  std::lock_guard<std::mutex> lk(g_registry_mu);
  registry().insert(c);
}
void comm_unregister(Comm* c) {
  std::lock_guard<std::mutex> lk(g_registry_mu);
  registry().erase(c);
}

void set_last_error(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  {
    std::lock_guard<std::mutex> lk(g_error_mu);
    error_text() = buf;
  }
  if (nccl_debug_warn()) {
    char host[64] = {};
    ::gethostname(host, sizeof host - 1);
    std::fprintf(stderr, "%s:%d [simgpu] NCCL WARN %s\n", host, static_cast<int>(getpid()), buf);
  }
}

std::string last_error() {
  std::lock_guard<std::mutex> lk(g_error_mu);
  return error_text();
}

double watchdog_seconds() {
  static const double s = static_cast<double>(env_int("SIMGPU_NCCL_TIMEOUT", 300));
  return s;
}
int launch_delay_ms() {
  static const int ms = static_cast<int>(env_int("SIMGPU_NCCL_LAUNCH_DELAY_MS", 20));
  return ms;
}

ncclResult_t check_comm(Comm* c, const char* fn) {
  if (c == nullptr) {
    set_last_error("%s: comm argument is NULL", fn);
    return ncclInvalidArgument;
  }
  if (!comm_live(c)) {
    set_last_error("simulated NCCL: %s on communicator %p, which was destroyed or aborted (use after free) or never "
                   "created", fn, static_cast<void*>(c));
    return ncclInvalidArgument;
  }
  return ncclSuccess;
}

ncclResult_t ensure_ready(Comm& c) {
  const int a = c.async.load();
  if (a == ncclSuccess) return ncclSuccess;
  // Like ncclCommEnsureReady: an error is returned as it is (its own message stays the last
  // error); only ncclInProgress is a misuse with a warning of its own.
  if (a != ncclInProgress) return static_cast<ncclResult_t>(a);
  set_last_error("Attempt to use communicator before the previous operation returned ncclSuccess");
  if (!c.blocking) c.set_error(ncclInvalidArgument);
  return ncclInvalidArgument;
}

// Waits until no launched op of the communicator remains (queued or running).
void wait_quiet(Comm& c) {
  std::unique_lock<std::mutex> lk(c.mu);
  c.cv.wait(lk, [&] { return c.inflight == 0; });
}

namespace {

// Like NCCL's ncclRegCleanup: destroy and abort drop the registrations the user did not deregister.
// The caller holds c.mu.
void release_registrations(Comm& c) {
  if (!c.registrations.empty())
    SIMGPU_LOG("nccl: rank %d drops %zu registrations still held", c.rank, c.registrations.size());
  for (const auto& [h, range] : c.registrations) delete[] static_cast<char*>(h);
  c.registrations.clear();
}

void finish_init(ncclComm* c, ncclUniqueId id) {
  ncclResult_t r = ncclSuccess;
  if (env("SIMGPU_FAIL_COMM_INIT") != nullptr && std::strcmp(env("SIMGPU_FAIL_COMM_INIT"), "0") != 0 &&
      simgpu_fault_applies()) {
    set_last_error("simulated NCCL: injected init failure on rank %d (SIMGPU_FAIL_COMM_INIT)", c->rank);
    r = ncclSystemError;
  } else {
    r = shm_join(*c, id);
  }
  // SIMGPU_NCCL_COMM_MEMORY (NCCL's buffers) is not taken here: NCCL >= 2.22 allocates it at the
  // first op (coll_api.cpp, connect_on_first_use).
  if (r == ncclSuccess) {
    int expected = ncclInProgress;
    c->async.compare_exchange_strong(expected, ncclSuccess);
  } else {
    c->async.store(r);
  }
  SIMGPU_LOG("nccl: rank %d/%d init on device %d (physical %d): %d", c->rank, c->nranks, c->cuda_dev, c->physical,
             static_cast<int>(r));
  std::lock_guard<std::mutex> lk(c->mu);
  --c->running;
  --c->inflight;
  c->cv.notify_all();
}

}  // namespace

thread_local std::vector<Comm*> t_group_inits;

ncclResult_t comm_init(ncclComm_t* out, int nranks, ncclUniqueId id, int rank, const ncclConfig_t* config) {
  if (out == nullptr) {
    set_last_error("ncclCommInitRank: comm argument is NULL");
    return ncclInvalidArgument;
  }
  *out = nullptr;
  if (nranks < 1 || nranks > kMaxRanks || rank < 0 || rank >= nranks) {
    set_last_error("simulated NCCL: invalid rank %d / nranks %d (the simulation supports up to %d ranks)", rank, nranks,
                   kMaxRanks);
    return ncclInvalidArgument;
  }
  if (!unique_id_valid(id)) {
    set_last_error("simulated NCCL: the ncclUniqueId does not come from ncclGetUniqueId of the simulated NCCL");
    return ncclInvalidArgument;
  }
  bool blocking = true;
  if (config != nullptr) {
    if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int)) {
      set_last_error("ncclConfig_t argument not initialized via NCCL_CONFIG_INITIALIZER");
      return ncclInvalidArgument;
    }
    const int b = config->blocking;
    if (b != NCCL_CONFIG_UNDEF_INT && b != 0 && b != 1) {
      set_last_error("Invalid config blocking attribute value %d", b);
      return ncclInvalidArgument;
    }
    if (b != NCCL_CONFIG_UNDEF_INT) blocking = b == 1;
    // NCCL 2.28 compares min and max before applying defaults: min alone (max still NCCL_CONFIG_UNDEF_INT,
    // i.e. INT_MIN) is "min > max" and rejected. Reproduced on purpose.
    const int mn = config->minCTAs, mx = config->maxCTAs;
    if ((mn != NCCL_CONFIG_UNDEF_INT && mn <= 0) || (mx != NCCL_CONFIG_UNDEF_INT && mx <= 0) || mn > mx) {
      set_last_error("Invalid config min/max channels attribute value %d/%d", mn, mx);
      return ncclInvalidArgument;
    }
    if (config->cgaClusterSize != NCCL_CONFIG_UNDEF_INT && config->cgaClusterSize < 0) {
      set_last_error("Invalid config cgaClusterSize attribute value %d", config->cgaClusterSize);
      return ncclInvalidArgument;
    }
  } else if (const char* b = env("NCCL_COMM_BLOCKING")) {
    blocking = std::atoi(b) != 0;
  }
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    set_last_error("simulated NCCL: cudaGetDevice failed (no simulated device visible)");
    return ncclUnhandledCudaError;
  }
  simgpu_set_fault_rank(rank);
  ncclComm* c = new ncclComm();  // never deleted: queued stream tasks may look at it after destroy/abort
  c->rank = rank;
  c->nranks = nranks;
  c->cuda_dev = dev;
  c->physical = simgpu_physical_device(dev);
  c->blocking = blocking;
  c->send_seq.assign(static_cast<size_t>(nranks), 0);
  c->recv_seq.assign(static_cast<size_t>(nranks), 0);
  c->async = ncclInProgress;
  c->running = 1;
  c->inflight = 1;
  comm_register(c);
  *out = c;
  if (!blocking || group_depth() > 0) {
    std::thread(finish_init, c, id).detach();
    if (blocking) {
      t_group_inits.push_back(c);  // a blocking init inside a group completes in ncclGroupEnd
      return ncclSuccess;
    }
    return ncclInProgress;
  }
  finish_init(c, id);
  // Like NCCL (which sets *newcomm before its init job runs): a failed init leaves the communicator
  // allocated, with the error as its async error; only ncclCommAbort frees it.
  return static_cast<ncclResult_t>(c->async.load());
}

}  // namespace simgpu

using namespace simgpu;

NCCL_API_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

NCCL_API_EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

NCCL_API_EXPORT const char* ncclGetLastError(ncclComm_t) {
  thread_local std::string copy;
  copy = last_error();
  return copy.c_str();
}

NCCL_API_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (id == nullptr) return ncclInvalidArgument;
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, "SIMGPU1", 8);
  if (::getrandom(id->internal + 8, 16, 0) != 16) {
    set_last_error("simulated NCCL: getrandom failed");
    return ncclSystemError;
  }
  const int pid = static_cast<int>(getpid());
  std::memcpy(id->internal + 24, &pid, sizeof pid);
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return comm_init(comm, nranks, id, rank, nullptr);
}

NCCL_API_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                                    ncclConfig_t* config) {
  return comm_init(comm, nranks, id, rank, config);
}

NCCL_API_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (ncclResult_t e = check_comm(comm, "ncclCommGetAsyncError")) return e;
  if (asyncError == nullptr) return ncclInvalidArgument;
  *asyncError = static_cast<ncclResult_t>(comm->async.load());
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t e = check_comm(comm, "ncclCommFinalize")) return e;
  if (ncclResult_t e = ensure_ready(*comm)) return e;
  {
    std::lock_guard<std::mutex> lk(comm->mu);
    if (comm->finalized) {
      set_last_error("ncclCommFinalize: communicator already finalized");
      return ncclInvalidArgument;
    }
  }
  if (comm->blocking) {
    wait_quiet(*comm);
    std::lock_guard<std::mutex> lk(comm->mu);
    comm->finalized = true;
    return static_cast<ncclResult_t>(comm->async.load());
  }
  comm->async = ncclInProgress;
  {
    std::lock_guard<std::mutex> lk(comm->mu);
    ++comm->inflight;
  }
  std::thread([comm] {
    std::unique_lock<std::mutex> lk(comm->mu);
    comm->cv.wait(lk, [&] { return comm->inflight == 1; });
    comm->finalized = true;
    --comm->inflight;
    int expected = ncclInProgress;
    comm->async.compare_exchange_strong(expected, ncclSuccess);
    comm->cv.notify_all();
  }).detach();
  return ncclInProgress;
}

NCCL_API_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t e = check_comm(comm, "ncclCommDestroy")) return e;
  // Like NCCL: a communicator that is not ready (init or a non-blocking call in progress) or has an
  // error is not destroyed; ncclCommAbort is the way out.
  if (ncclResult_t e = ensure_ready(*comm)) return e;
  wait_quiet(*comm);  // outstanding work completes first
  comm_unregister(comm);
  {
    // Graph replays are not counted in flight: wait for one that may be running, and stop later ones.
    std::unique_lock<std::mutex> lk(comm->mu);
    comm->dead = true;
    comm->cv.wait(lk, [&] { return comm->running == 0; });
  }
  shm_leave(*comm);
  simgpu_release_device_memory(comm->reserved);
  comm->reserved = nullptr;
  std::lock_guard<std::mutex> lk(comm->mu);
  release_registrations(*comm);
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  if (ncclResult_t e = check_comm(comm, "ncclCommAbort")) return e;
  comm_unregister(comm);
  comm->aborting = true;
  std::unique_lock<std::mutex> lk(comm->mu);
  comm->dead = true;
  comm->cv.wait(lk, [&] { return comm->running == 0; });  // ops in flight notice the abort and return
  if (comm->shm != nullptr) {
    // Peers waiting on this rank see a remote error, as they would when its connections close.
    int32_t expected = 0;
    if (comm->shm->error_lock.compare_exchange_strong(expected, 1)) {
      std::snprintf(comm->shm->error_msg, sizeof comm->shm->error_msg,
                    "simulated NCCL: rank %d aborted its communicator", comm->rank);
      comm->shm->error.store(ncclRemoteError, std::memory_order_release);
    }
  }
  shm_leave(*comm);
  simgpu_release_device_memory(comm->reserved);
  comm->reserved = nullptr;
  release_registrations(*comm);
  SIMGPU_LOG("nccl: rank %d communicator aborted", comm->rank);
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (ncclResult_t e = check_comm(comm, "ncclCommCount")) return e;
  if (count == nullptr) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  if (ncclResult_t e = check_comm(comm, "ncclCommCuDevice")) return e;
  if (device == nullptr) return ncclInvalidArgument;
  *device = comm->cuda_dev;
  return ncclSuccess;
}

NCCL_API_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (ncclResult_t e = check_comm(comm, "ncclCommUserRank")) return e;
  if (rank == nullptr) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
