#include "engine.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "../common/knobs.hpp"
#include "../common/simgpu_private.h"
#include "transport.hpp"

namespace simgpu {
namespace {

// Host views of the device buffers, resolved at execution time (memory freed since the call is an
// illegal address, as a kernel would find it).
struct Views {
  const char* send = nullptr;
  char* recv = nullptr;
};

size_t bytes_of(const OpDesc& op, size_t elems) { return elems * dtype_size(op.dtype); }

// Buffer sizes each op reads/writes on this rank.
void extents(const OpDesc& op, int rank, int n, size_t* send_elems, size_t* recv_elems) {
  const size_t c = op.count, N = static_cast<size_t>(n);
  size_t s = 0, r = 0;
  switch (op.kind) {
    case OpKind::AllReduce: s = r = c; break;
    case OpKind::AllGather: s = c; r = c * N; break;
    case OpKind::ReduceScatter: s = c * N; r = c; break;
    case OpKind::Broadcast: s = (rank == op.root) ? c : 0; r = c; break;
    case OpKind::Reduce: s = c; r = (rank == op.root) ? c : 0; break;
    case OpKind::AllToAll: s = r = c * N; break;
    case OpKind::Gather: s = c; r = (rank == op.root) ? c * N : 0; break;
    case OpKind::Scatter: s = (rank == op.root) ? c * N : 0; r = c; break;
    case OpKind::Send: s = c; break;
    case OpKind::Recv: r = c; break;
    case OpKind::AllToAllv:
      for (int j = 0; j < n; ++j) {
        s = std::max(s, op.sdispls[static_cast<size_t>(j)] + op.scounts[static_cast<size_t>(j)]);
        r = std::max(r, op.rdispls[static_cast<size_t>(j)] + op.rcounts[static_cast<size_t>(j)]);
      }
      break;
  }
  *send_elems = s;
  *recv_elems = r;
}

ncclResult_t resolve(Comm& c, const OpDesc& op, Views* v) {
  size_t se = 0, re = 0;
  extents(op, c.rank, c.nranks, &se, &re);
  int phys = -1;
  if (se > 0) {
    v->send = static_cast<const char*>(simgpu_device_view(op.send, bytes_of(op, se), &phys));
    if (v->send == nullptr || phys != c.physical) {
      set_last_error("simulated NCCL: %s send buffer %p (%zu bytes) is not (or no longer) device memory of the "
                     "communicator's GPU: illegal memory access",
                     op_name(op.kind), op.send, bytes_of(op, se));
      return ncclUnhandledCudaError;
    }
  }
  if (re > 0) {
    v->recv = static_cast<char*>(simgpu_device_view(op.recv, bytes_of(op, re), &phys));
    if (v->recv == nullptr || phys != c.physical) {
      set_last_error("simulated NCCL: %s receive buffer %p (%zu bytes) is not (or no longer) device memory of the "
                     "communicator's GPU: illegal memory access",
                     op_name(op.kind), op.recv, bytes_of(op, re));
      return ncclUnhandledCudaError;
    }
  }
  return ncclSuccess;
}

std::string describe(const WireOp& w) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "#%llu %s(count=%llu, %s, redop=%d, root=%d)", static_cast<unsigned long long>(w.seq),
                op_name(static_cast<OpKind>(w.kind)), static_cast<unsigned long long>(w.count),
                dtype_name(static_cast<ncclDataType_t>(w.dtype)), w.redop, w.root);
  return buf;
}

Reduction reduction_of(Comm& c, ncclRedOp_t op) {
  Reduction r;
  if (op < ncclNumOps) {
    r.base = op;
    return r;
  }
  std::lock_guard<std::mutex> lk(c.mu);
  auto it = c.custom_ops.find(static_cast<int>(op));
  return it == c.custom_ops.end() ? r : it->second;
}

char* slot(Comm& c, int r) { return c.base + c.layout.slots_offset + static_cast<size_t>(r) * c.layout.slot_bytes; }

// Publish / barrier / consume / barrier, `rounds` times.
template <class Publish, class Consume>
ncclResult_t rounds(Comm& c, size_t n_rounds, const char* what, Publish publish, Consume consume) {
  for (size_t k = 0; k < n_rounds; ++k) {
    publish(k, slot(c, c.rank));
    if (ncclResult_t e = barrier(c, what)) return e;
    consume(k);
    if (ncclResult_t e = barrier(c, what)) return e;
  }
  if (n_rounds == 0) return barrier(c, what);  // keeps the descriptor check's reads apart from the next op
  return ncclSuccess;
}

size_t ceil_div(size_t a, size_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

ncclResult_t run_collective(Comm& c, const OpDesc& op, const Views& v) {
  const int n = c.nranks, me = c.rank;
  const size_t N = static_cast<size_t>(n);
  const size_t es = dtype_size(op.dtype);
  const size_t cap = c.layout.slot_bytes / es;  // elements per slot
  const size_t per_peer = std::max<size_t>(1, cap / N);
  const Reduction red = reduction_of(c, op.redop);
  std::vector<const void*> ins(N);
  auto slot_at = [&](int r, size_t elem_off) { return slot(c, r) + elem_off * es; };
  const char* what = op_name(op.kind);
  const size_t count = op.count;

  switch (op.kind) {
    case OpKind::AllReduce:
    case OpKind::Reduce: {
      const bool writes = op.kind == OpKind::AllReduce || me == op.root;
      return rounds(c, ceil_div(count, cap), what,
          [&](size_t k, char* mine) {
            size_t off = k * cap, len = std::min(cap, count - off);
            std::memcpy(mine, v.send + off * es, len * es);
          },
          [&](size_t k) {
            size_t off = k * cap, len = std::min(cap, count - off);
            if (!writes) return;
            for (int r = 0; r < n; ++r) ins[static_cast<size_t>(r)] = slot_at(r, 0);
            reduce(op.dtype, red, n, v.recv + off * es, ins.data(), len);
          });
    }
    case OpKind::ReduceScatter:
      return rounds(c, ceil_div(count, per_peer), what,
          [&](size_t k, char* mine) {
            size_t off = k * per_peer, len = std::min(per_peer, count - off);
            for (size_t j = 0; j < N; ++j) std::memcpy(mine + j * per_peer * es, v.send + (j * count + off) * es, len * es);
          },
          [&](size_t k) {
            size_t off = k * per_peer, len = std::min(per_peer, count - off);
            for (int r = 0; r < n; ++r) ins[static_cast<size_t>(r)] = slot_at(r, static_cast<size_t>(me) * per_peer);
            reduce(op.dtype, red, n, v.recv + off * es, ins.data(), len);
          });
    case OpKind::AllGather:
    case OpKind::Gather:
      return rounds(c, ceil_div(count, cap), what,
          [&](size_t k, char* mine) {
            size_t off = k * cap, len = std::min(cap, count - off);
            std::memcpy(mine, v.send + off * es, len * es);
          },
          [&](size_t k) {
            size_t off = k * cap, len = std::min(cap, count - off);
            if (op.kind == OpKind::Gather && me != op.root) return;
            for (size_t r = 0; r < N; ++r) std::memmove(v.recv + (r * count + off) * es, slot_at(static_cast<int>(r), 0), len * es);
          });
    case OpKind::Broadcast:
      return rounds(c, ceil_div(count, cap), what,
          [&](size_t k, char* mine) {
            size_t off = k * cap, len = std::min(cap, count - off);
            if (me == op.root) std::memcpy(mine, v.send + off * es, len * es);
          },
          [&](size_t k) {
            size_t off = k * cap, len = std::min(cap, count - off);
            std::memmove(v.recv + off * es, slot_at(op.root, 0), len * es);
          });
    case OpKind::Scatter:
      return rounds(c, ceil_div(count, per_peer), what,
          [&](size_t k, char* mine) {
            size_t off = k * per_peer, len = std::min(per_peer, count - off);
            if (me != op.root) return;
            for (size_t j = 0; j < N; ++j) std::memcpy(mine + j * per_peer * es, v.send + (j * count + off) * es, len * es);
          },
          [&](size_t k) {
            size_t off = k * per_peer, len = std::min(per_peer, count - off);
            std::memmove(v.recv + off * es, slot_at(op.root, static_cast<size_t>(me) * per_peer), len * es);
          });
    case OpKind::AllToAll:
      return rounds(c, ceil_div(count, per_peer), what,
          [&](size_t k, char* mine) {
            size_t off = k * per_peer, len = std::min(per_peer, count - off);
            for (size_t j = 0; j < N; ++j) std::memcpy(mine + j * per_peer * es, v.send + (j * count + off) * es, len * es);
          },
          [&](size_t k) {
            size_t off = k * per_peer, len = std::min(per_peer, count - off);
            for (size_t r = 0; r < N; ++r)
              std::memmove(v.recv + (r * count + off) * es, slot_at(static_cast<int>(r), static_cast<size_t>(me) * per_peer), len * es);
          });
    case OpKind::AllToAllv: {
      size_t longest = 0;
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < n; ++j) longest = std::max<size_t>(longest, c.shm->rank[r].op.counts[j]);
      return rounds(c, ceil_div(longest, per_peer), what,
          [&](size_t k, char* mine) {
            size_t off = k * per_peer;
            for (size_t j = 0; j < N; ++j) {
              if (off >= op.scounts[j]) continue;
              size_t len = std::min(per_peer, op.scounts[j] - off);
              std::memcpy(mine + j * per_peer * es, v.send + (op.sdispls[j] + off) * es, len * es);
            }
          },
          [&](size_t k) {
            size_t off = k * per_peer;
            for (size_t r = 0; r < N; ++r) {
              if (off >= op.rcounts[r]) continue;
              size_t len = std::min(per_peer, op.rcounts[r] - off);
              std::memcpy(v.recv + (op.rdispls[r] + off) * es, slot_at(static_cast<int>(r), static_cast<size_t>(me) * per_peer), len * es);
            }
          });
    }
    default:
      return ncclInternalError;
  }
}

// Every rank publishes its op; all must be the same (alltoallv: my recvcounts must equal the peers'
// sendcounts to me). A mismatch fails on every rank with the same message instead of hanging.
ncclResult_t check_consistency(Comm& c, const OpDesc& op) {
  WireOp& w = c.shm->rank[c.rank].op;
  std::memset(&w, 0, sizeof w);
  w.seq = ++c.coll_seq;
  w.kind = static_cast<int32_t>(op.kind);
  w.dtype = op.dtype;
  const bool reduces = op.kind == OpKind::AllReduce || op.kind == OpKind::Reduce || op.kind == OpKind::ReduceScatter;
  w.redop = reduces ? op.redop : -1;
  const bool rooted = op.kind == OpKind::Broadcast || op.kind == OpKind::Reduce || op.kind == OpKind::Gather ||
                      op.kind == OpKind::Scatter;
  w.root = rooted ? op.root : -1;
  w.count = op.kind == OpKind::AllToAllv ? 0 : op.count;
  for (size_t j = 0; j < op.scounts.size(); ++j) w.counts[j] = op.scounts[j];
  if (ncclResult_t e = barrier(c, op_name(op.kind))) return e;
  for (int r = 0; r < c.nranks; ++r) {
    const WireOp& o = c.shm->rank[r].op;
    bool same = o.seq == w.seq && o.kind == w.kind && o.dtype == w.dtype && o.redop == w.redop && o.root == w.root &&
                o.count == w.count;
    std::string extra;
    if (same && op.kind == OpKind::AllToAllv && o.counts[c.rank] != op.rcounts[static_cast<size_t>(r)]) {
      same = false;
      extra = " (rank " + std::to_string(r) + " sends " + std::to_string(o.counts[c.rank]) + " elements to rank " +
              std::to_string(c.rank) + ", which expects " + std::to_string(op.rcounts[static_cast<size_t>(r)]) + ")";
    }
    if (!same) {
      std::string msg = "simulated NCCL: ranks called different collectives: rank " + std::to_string(c.rank) + " " +
                        describe(w) + " but rank " + std::to_string(r) + " " + describe(o) + extra;
      set_last_error("%s", msg.c_str());
      // Every rank compares all descriptors, so each fails on its own; the shared flag stops stragglers.
      shared_fail(c, ncclInvalidUsage, msg);
      return ncclInvalidUsage;
    }
  }
  return ncclSuccess;
}

char* channel_data(Comm& c, int src, int dst, uint64_t slot_index) {
  const size_t pair = static_cast<size_t>(src) * static_cast<size_t>(c.nranks) + static_cast<size_t>(dst);
  return c.base + c.layout.data_offset + (pair * kP2pSlots + slot_index % kP2pSlots) * c.layout.chunk_bytes;
}
ChannelHdr& channel(Comm& c, int src, int dst) {
  auto* hdrs = reinterpret_cast<ChannelHdr*>(c.base + c.layout.channels_offset);
  return hdrs[static_cast<size_t>(src) * static_cast<size_t>(c.nranks) + static_cast<size_t>(dst)];
}

struct P2p {
  const OpDesc* op;
  Views v;
  size_t total = 0, done = 0;
  uint64_t seq = 0;
  bool started = false;
};

// All sends and receives of the batch progress together (what a group gives); messages to the same
// peer go in batch order. An ungrouped receive is a batch of one: it blocks its stream until matched.
ncclResult_t run_p2p(Comm& c, std::vector<P2p>& ps) {
  Waiter w(c, ps.size() == 1 ? (ps[0].op->kind == OpKind::Recv ? "ncclRecv from rank " : "ncclSend to rank ") +
                                   std::to_string(ps[0].op->root)
                             : std::string("grouped send/recv"));
  for (;;) {
    bool all_done = true, progress = false;
    std::vector<int> busy_send(static_cast<size_t>(c.nranks), 0), busy_recv(static_cast<size_t>(c.nranks), 0);
    for (P2p& p : ps) {
      if (p.started && p.done >= p.total) continue;
      const int peer = p.op->root;
      int& busy = p.op->kind == OpKind::Send ? busy_send[static_cast<size_t>(peer)] : busy_recv[static_cast<size_t>(peer)];
      all_done = false;
      if (busy) continue;  // an earlier message to/from this peer is still in flight
      busy = 1;
      if (!p.started) {
        p.started = true;
        p.seq = p.op->kind == OpKind::Send ? ++c.send_seq[static_cast<size_t>(peer)] : ++c.recv_seq[static_cast<size_t>(peer)];
      }
      if (p.op->kind == OpKind::Send) {
        ChannelHdr& ch = channel(c, c.rank, peer);
        for (;;) {
          const uint64_t head = ch.head.load(std::memory_order_relaxed), tail = ch.tail.load(std::memory_order_acquire);
          if (head - tail >= kP2pSlots || (p.done >= p.total && p.total > 0)) break;
          const size_t len = std::min(c.layout.chunk_bytes, p.total - p.done);
          ChunkMeta& m = ch.meta[head % kP2pSlots];
          m.msg_seq = p.seq;
          m.bytes_total = p.total;
          m.dtype = p.op->dtype;
          m.count = p.op->count;
          m.len = len;
          std::memcpy(channel_data(c, c.rank, peer, head), p.v.send + p.done, len);
          p.done += len;
          ch.head.store(head + 1, std::memory_order_release);
          progress = true;
          if (p.done >= p.total) break;
        }
      } else {
        ChannelHdr& ch = channel(c, peer, c.rank);
        for (;;) {
          const uint64_t tail = ch.tail.load(std::memory_order_relaxed), head = ch.head.load(std::memory_order_acquire);
          if (head == tail || p.done >= p.total) break;
          const ChunkMeta& m = ch.meta[tail % kP2pSlots];
          if (m.msg_seq != p.seq || m.count != p.op->count || m.dtype != p.op->dtype) {
            std::string msg = "simulated NCCL: rank " + std::to_string(peer) + " sent message #" + std::to_string(m.msg_seq) +
                              " of " + std::to_string(m.count) + " " + dtype_name(static_cast<ncclDataType_t>(m.dtype)) +
                              " but rank " + std::to_string(c.rank) + " receives " + std::to_string(p.op->count) + " " +
                              dtype_name(p.op->dtype) + " as message #" + std::to_string(p.seq) +
                              " (send and recv must match in count and datatype)";
            shared_fail(c, ncclInvalidUsage, msg);
            return ncclInvalidUsage;
          }
          std::memcpy(p.v.recv + p.done, channel_data(c, peer, c.rank, tail), m.len);
          p.done += m.len;
          ch.tail.store(tail + 1, std::memory_order_release);
          progress = true;
        }
      }
      if (p.done >= p.total) progress = true;
    }
    if (all_done) return ncclSuccess;
    if (progress) {
      w.progressed();
      continue;
    }
    if (ncclResult_t e = w.idle()) return e;
  }
}

// Fault knobs: SIMGPU_ASYNC_ERROR_AFTER=N, SIMGPU_HANG_AFTER=N (SIMGPU_FAULT_RANK limits them).
ncclResult_t apply_faults(Comm& c) {
  const uint64_t n = ++c.ops_executed;
  if (!simgpu_fault_applies()) return ncclSuccess;
  const long long err_after = env_int("SIMGPU_ASYNC_ERROR_AFTER", -1);
  if (err_after >= 0 && n > static_cast<unsigned long long>(err_after)) {
    set_last_error("simulated NCCL: injected asynchronous error after %lld ops (SIMGPU_ASYNC_ERROR_AFTER)", err_after);
    return ncclSystemError;
  }
  const long long hang_after = env_int("SIMGPU_HANG_AFTER", -1);
  if (hang_after >= 0 && n > static_cast<unsigned long long>(hang_after)) {
    SIMGPU_LOG("nccl: rank %d op %llu hangs (SIMGPU_HANG_AFTER=%lld) until ncclCommAbort", c.rank,
               static_cast<unsigned long long>(n), hang_after);
    std::snprintf(c.shm->rank[c.rank].doing, sizeof c.shm->rank[c.rank].doing, "hung (SIMGPU_HANG_AFTER)");
    while (!c.aborting.load()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return ncclRemoteError;
  }
  return ncclSuccess;
}

}  // namespace

void execute_batch(Comm& c, const std::vector<OpDesc>& ops) {
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (c.dead || c.aborting.load()) return;
    ++c.running;
  }
  ncclResult_t err = ncclSuccess;
  {
    std::lock_guard<std::mutex> exec(c.exec_mu);
    const int a = c.async.load();
    if (a != ncclSuccess && a != ncclInProgress) err = static_cast<ncclResult_t>(a);  // broken: do nothing
    std::vector<P2p> p2p;
    for (const OpDesc& op : ops) {
      if (err != ncclSuccess) break;
      std::snprintf(c.shm->rank[c.rank].doing, sizeof c.shm->rank[c.rank].doing, "%s(count=%zu, %s, root/peer=%d)",
                    op_name(op.kind), op.count, dtype_name(op.dtype), op.root);
      if ((err = apply_faults(c)) != ncclSuccess) break;
      Views v;
      if ((err = resolve(c, op, &v)) != ncclSuccess) break;
      if (op.is_p2p()) {
        if (op.count > 0) p2p.push_back(P2p{&op, v, bytes_of(op, op.count)});
        continue;
      }
      if ((err = check_consistency(c, op)) != ncclSuccess) break;
      err = run_collective(c, op, v);
    }
    if (err == ncclSuccess && !p2p.empty()) err = run_p2p(c, p2p);
    std::snprintf(c.shm->rank[c.rank].doing, sizeof c.shm->rank[c.rank].doing, "%s",
                  err == ncclSuccess ? "idle" : "failed");
  }
  if (err != ncclSuccess && !c.aborting.load()) {
    SIMGPU_LOG("nccl: rank %d op failed: %s", c.rank, last_error().c_str());
    c.set_error(err);
  }
  std::lock_guard<std::mutex> lk(c.mu);
  --c.running;
  c.cv.notify_all();
}

}  // namespace simgpu
