#include "transport.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "../common/knobs.hpp"

namespace simgpu {
namespace {

constexpr char kMagic[8] = {'S', 'I', 'M', 'G', 'P', 'U', '1', '\0'};

size_t align(size_t n) { return (n + 4095) / 4096 * 4096; }

std::string host_identity() {
  if (const char* h = env("NCCL_HOSTID")) return h;  // NCCL's own override of the host identity
  char buf[96] = {};
  ::gethostname(buf, sizeof(buf) - 1);
  return buf;
}

}  // namespace

ShmLayout ShmLayout::for_ranks(int nranks) {
  ShmLayout l{};
  l.slot_bytes = static_cast<size_t>(parse_bytes(env("SIMGPU_NCCL_SLOT_BYTES"), 1 << 20));
  l.slot_bytes = l.slot_bytes < 4096 ? 4096 : (l.slot_bytes + 63) / 64 * 64;
  l.chunk_bytes = 256 << 10;
  const size_t n = static_cast<size_t>(nranks);
  l.slots_offset = align(sizeof(ShmHeader));
  l.channels_offset = align(l.slots_offset + n * l.slot_bytes);
  l.data_offset = align(l.channels_offset + n * n * sizeof(ChannelHdr));
  l.total = align(l.data_offset + n * n * kP2pSlots * l.chunk_bytes);
  return l;
}

bool unique_id_valid(const ncclUniqueId& id) { return std::memcmp(id.internal, kMagic, sizeof kMagic) == 0; }

std::string shm_name_of(const ncclUniqueId& id) {
  static const char* hex = "0123456789abcdef";
  std::string s = "/simgpu-nccl-";
  for (int i = 8; i < 24; ++i) {
    auto b = static_cast<unsigned char>(id.internal[i]);
    s += hex[b >> 4];
    s += hex[b & 15];
  }
  return s;
}

void shared_fail(Comm& c, ncclResult_t e, const std::string& msg) {
  set_last_error("%s", msg.c_str());
  if (c.shm == nullptr) return;
  int32_t expected = 0;
  if (c.shm->error_lock.compare_exchange_strong(expected, 1)) {
    std::snprintf(c.shm->error_msg, sizeof c.shm->error_msg, "%s", msg.c_str());
    c.shm->error.store(static_cast<int32_t>(e), std::memory_order_release);
  }
}

Waiter::Waiter(Comm& c, std::string what)
    : c_(c), what_(std::move(what)), start_(std::chrono::steady_clock::now()), next_peer_check_(start_) {}

void Waiter::progressed() {
  spins_ = 0;
  start_ = std::chrono::steady_clock::now();  // the watchdog measures time without progress
}

ncclResult_t Waiter::idle() {
  if (c_.aborting.load()) return ncclRemoteError;
  if (int e = c_.shm->error.load(std::memory_order_acquire)) {
    set_last_error("%s", c_.shm->error_msg);
    return static_cast<ncclResult_t>(e);
  }
  const auto now = std::chrono::steady_clock::now();
  if (now >= next_peer_check_) {
    next_peer_check_ = now + std::chrono::milliseconds(50);
    for (int r = 0; r < c_.nranks; ++r) {
      const RankInfo& ri = c_.shm->rank[r];
      if (r == c_.rank || !ri.present.load()) continue;
      if (::kill(ri.pid, 0) != 0 && errno == ESRCH) {
        shared_fail(c_, ncclRemoteError,
                    "simulated NCCL: rank " + std::to_string(r) + " (pid " + std::to_string(ri.pid) +
                        ") exited while rank " + std::to_string(c_.rank) + " waited in " + what_);
        return ncclRemoteError;
      }
    }
    if (std::chrono::duration<double>(now - start_).count() > watchdog_seconds()) {
      std::string who;
      for (int r = 0; r < c_.nranks; ++r)
        who += " [rank " + std::to_string(r) + ": " +
               (c_.shm->rank[r].present.load() ? std::string(c_.shm->rank[r].doing) : std::string("not joined")) + "]";
      shared_fail(c_, ncclSystemError,
                  "simulated NCCL watchdog (SIMGPU_NCCL_TIMEOUT=" + std::to_string(watchdog_seconds()) +
                      " s): rank " + std::to_string(c_.rank) + " made no progress in " + what_ +
                      " (a real GPU would hang here);" + who);
      return ncclSystemError;
    }
  }
  ++spins_;
  if (spins_ < 50)
    std::this_thread::yield();
  else
    std::this_thread::sleep_for(std::chrono::microseconds(spins_ < 500 ? 20 : 200));
  return ncclSuccess;
}

ncclResult_t barrier(Comm& c, const char* what) {
  const uint64_t target = ++c.barriers;
  c.shm->rank[c.rank].barrier.store(target, std::memory_order_release);
  Waiter w(c, what);
  for (int r = 0; r < c.nranks; ++r) {
    while (c.shm->rank[r].barrier.load(std::memory_order_acquire) < target) {
      if (ncclResult_t e = w.idle()) return e;
    }
  }
  return ncclSuccess;
}

ncclResult_t shm_join(Comm& c, const ncclUniqueId& id) {
  c.shm_name = shm_name_of(id);
  c.layout = ShmLayout::for_ranks(c.nranks);
  int fd = ::shm_open(c.shm_name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) {
    set_last_error("simulated NCCL: shm_open %s: %s", c.shm_name.c_str(), std::strerror(errno));
    return ncclSystemError;
  }
  struct stat st {};
  ::fstat(fd, &st);
  if (static_cast<size_t>(st.st_size) < c.layout.total && ::ftruncate(fd, static_cast<off_t>(c.layout.total)) != 0) {
    set_last_error("simulated NCCL: cannot size %s: %s", c.shm_name.c_str(), std::strerror(errno));
    ::close(fd);
    return ncclSystemError;
  }
  void* p = ::mmap(nullptr, c.layout.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    set_last_error("simulated NCCL: mmap %s: %s", c.shm_name.c_str(), std::strerror(errno));
    return ncclSystemError;
  }
  c.base = static_cast<char*>(p);
  c.map_size = c.layout.total;
  c.shm = reinterpret_cast<ShmHeader*>(c.base);

  int32_t zero = 0;
  if (!c.shm->nranks.compare_exchange_strong(zero, c.nranks) && zero != c.nranks) {
    shared_fail(c, ncclInvalidUsage,
                "simulated NCCL: rank " + std::to_string(c.rank) + " initialises with nranks=" +
                    std::to_string(c.nranks) + " but another rank used nranks=" + std::to_string(zero));
    return ncclInvalidUsage;
  }
  RankInfo& me = c.shm->rank[c.rank];
  int32_t was = me.present.load();
  if (was != 0) {
    shared_fail(c, ncclInvalidUsage, "simulated NCCL: two processes initialise rank " + std::to_string(c.rank));
    return ncclInvalidUsage;
  }
  me.pid = static_cast<int32_t>(::getpid());
  me.nranks = c.nranks;
  me.physical = c.physical;
  me.cuda_dev = c.cuda_dev;
  std::snprintf(me.host, sizeof me.host, "%s", host_identity().c_str());
  std::snprintf(me.doing, sizeof me.doing, "init");
  me.present.store(1, std::memory_order_release);

  Waiter w(c, "ncclCommInitRank (waiting for all ranks to join)");
  for (int r = 0; r < c.nranks; ++r) {
    while (c.shm->rank[r].present.load(std::memory_order_acquire) == 0) {
      if (ncclResult_t e = w.idle()) {
        ::shm_unlink(c.shm_name.c_str());
        return e;
      }
    }
  }
  ::shm_unlink(c.shm_name.c_str());  // everyone has it mapped; leave nothing behind in /dev/shm
  for (int a = 0; a < c.nranks; ++a) {
    for (int b = a + 1; b < c.nranks; ++b) {
      const RankInfo &ra = c.shm->rank[a], &rb = c.shm->rank[b];
      if (ra.physical == rb.physical && std::strcmp(ra.host, rb.host) == 0) {
        char msg[256];
        std::snprintf(msg, sizeof msg, "Duplicate GPU detected : rank %d and rank %d both on CUDA device %x", a, b,
                      0x10 + ra.physical);
        set_last_error("%s", msg);
        return ncclInvalidUsage;
      }
    }
  }
  std::snprintf(me.doing, sizeof me.doing, "idle");
  return ncclSuccess;
}

void shm_leave(Comm& c) {
  if (c.base != nullptr) ::munmap(c.base, c.map_size);
  c.base = nullptr;
  c.shm = nullptr;
}

}  // namespace simgpu
