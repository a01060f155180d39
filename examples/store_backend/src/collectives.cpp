// Every operation of the ABI built from the host's bootstrap services.
//
// Two building blocks:
//  - bootstrap_allgather / bootstrap_broadcast / bootstrap_barrier: collective calls of the host.
//  - kv_set / kv_get: a key/value store scoped to the run. A message from rank a to rank b is a
//    key only they know ("<comm>/c<seq>/<a>-><b>" inside collectives, "<comm>/p2p/<a>-><b>/..."
//    for send/recv); kv_get waits until the key exists, which is what makes a receive block.
//
// Reductions combine the ranks' contributions in rank order 0, 1, ..., n-1 on every rank, so a
// floating-point result is bitwise the same everywhere, whatever order the data arrived in.
#include <cstring>
#include <string>
#include <vector>

#include <commbench/sdk/dtypes.hpp>
#include <commbench/sdk/host_reduce.hpp>
#include <commbench/sdk/op_args.hpp>

#include "store_backend.h"

namespace store_backend {
namespace {

namespace sdk = commbench::sdk;
using Bytes = std::vector<unsigned char>;

const cb_host_services& host_of(const cb_comm& comm) { return comm.backend->host; }

unsigned char* at(void* base, size_t offset) { return static_cast<unsigned char*>(base) + offset; }
const unsigned char* at(const void* base, size_t offset) {
  return static_cast<const unsigned char*>(base) + offset;
}

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  auto pa = reinterpret_cast<uintptr_t>(a), pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

// ---- messages through the key/value store

std::string message_key(const cb_comm& comm, uint64_t seq, int32_t from, int32_t to) {
  return comm.key_prefix + "c" + std::to_string(seq) + "/" + std::to_string(from) + "->" +
         std::to_string(to);
}

void put(const cb_comm& comm, const std::string& key, const void* data, size_t bytes) {
  const cb_host_services& h = host_of(comm);
  check_host(h.kv_set(h.ctx, key.c_str(), data, bytes, comm.op_timeout_ms), "kv_set");
}

// Waits up to `timeout_ms` for `key`; false if it did not appear. Copies exactly `bytes` into
// `dest`, then releases the value: each key has exactly one reader, so the reader may overwrite
// it with an empty value. The ABI has no delete, and without this a long benchmark would keep
// every message it ever sent in the store.
bool try_take(const cb_comm& comm, const std::string& key, void* dest, size_t bytes,
              int32_t timeout_ms) {
  const cb_host_services& h = host_of(comm);
  size_t length = 0;
  cb_status status = h.kv_get(h.ctx, key.c_str(), dest, bytes, &length, timeout_ms);
  if (status == CB_ERR_TIMEOUT) return false;
  check_host(status, "kv_get");
  if (length != bytes)
    fail(CB_ERR_INVALID_ARGUMENT,
                  "message " + key + " has " + std::to_string(length) + " bytes, expected " +
                      std::to_string(bytes) + ": the ranks disagree on count or dtype");
  static const char kEmpty = 0;
  check_host(h.kv_set(h.ctx, key.c_str(), &kEmpty, 0, comm.op_timeout_ms), "kv_set");
  return true;
}

void take(const cb_comm& comm, const std::string& key, void* dest, size_t bytes) {
  if (!try_take(comm, key, dest, bytes, comm.op_timeout_ms))
    fail(CB_ERR_TIMEOUT, "message " + key + " did not arrive within " + std::to_string(comm.op_timeout_ms) +
                             " ms (option timeout_ms, at most comm_create's timeout): its sender is late or gone");
}

// ---- reductions

// acc = acc (op) block; AVG is a SUM here and becomes an average in finish_reduction.
void fold(const cb_op_args& a, void* acc, const void* block) {
  sdk::reduce(a.dtype, a.redop, acc, acc, block, a.count);
}

void finish_reduction(const cb_op_args& a, void* acc, int32_t world_size) {
  if (a.redop == CB_REDOP_AVG) sdk::reduce_finish_avg(a.dtype, acc, a.count, world_size);
}

// ---- the operations. `bytes` is one rank's block: count * dtype size.

void allreduce(cb_comm& comm, const cb_op_args& a, size_t bytes) {
  const cb_host_services& h = host_of(comm);
  Bytes all(bytes * static_cast<size_t>(h.world_size));  // every rank's input, rank order
  check_host(h.bootstrap_allgather(h.ctx, a.sendbuf, bytes, all.data(), comm.op_timeout_ms),
             "bootstrap_allgather");
  // `all` is a copy, so writing recvbuf is safe even in place (recvbuf == sendbuf).
  std::memcpy(a.recvbuf, all.data(), bytes);
  for (int32_t r = 1; r < h.world_size; ++r) fold(a, a.recvbuf, at(all.data(), r * bytes));
  finish_reduction(a, a.recvbuf, h.world_size);
}

void allgather(cb_comm& comm, const cb_op_args& a, size_t bytes) {
  const cb_host_services& h = host_of(comm);
  // In place, sendbuf is this rank's block inside recvbuf. The host's allgather may write
  // recvbuf before it is done reading sendbuf, so give it a private copy of the input.
  Bytes staged;
  const void* send = a.sendbuf;
  if (overlaps(a.sendbuf, bytes, a.recvbuf, bytes * static_cast<size_t>(h.world_size))) {
    staged.assign(at(a.sendbuf, 0), at(a.sendbuf, bytes));
    send = staged.data();
  }
  check_host(h.bootstrap_allgather(h.ctx, send, bytes, a.recvbuf, comm.op_timeout_ms),
             "bootstrap_allgather");
}

void broadcast(cb_comm& comm, const cb_op_args& a, size_t bytes) {
  const cb_host_services& h = host_of(comm);
  // The host broadcasts one buffer in place: the root's data must already be in recvbuf.
  if (h.rank == a.root && a.sendbuf != a.recvbuf) std::memcpy(a.recvbuf, a.sendbuf, bytes);
  check_host(h.bootstrap_broadcast(h.ctx, a.recvbuf, bytes, a.root, comm.op_timeout_ms),
             "bootstrap_broadcast");
}

void reducescatter(cb_comm& comm, const cb_op_args& a, size_t bytes, uint64_t seq) {
  const cb_host_services& h = host_of(comm);
  const int32_t me = h.rank;
  // Block j of my input is my contribution to rank j's result.
  for (int32_t j = 0; j < h.world_size; ++j)
    if (j != me) put(comm, message_key(comm, seq, me, j), at(a.sendbuf, j * bytes), bytes);
  // Accumulate separately: in place, recvbuf is block `me` of sendbuf, still needed as input.
  Bytes acc(bytes), block(bytes);
  for (int32_t r = 0; r < h.world_size; ++r) {
    const void* contribution = at(a.sendbuf, me * bytes);
    if (r != me) {
      take(comm, message_key(comm, seq, r, me), block.data(), bytes);
      contribution = block.data();
    }
    if (r == 0) std::memcpy(acc.data(), contribution, bytes);
    else fold(a, acc.data(), contribution);
  }
  finish_reduction(a, acc.data(), h.world_size);
  std::memcpy(a.recvbuf, acc.data(), bytes);
}

void reduce(cb_comm& comm, const cb_op_args& a, size_t bytes, uint64_t seq) {
  const cb_host_services& h = host_of(comm);
  if (h.rank != a.root) {  // only the root's recvbuf is written, as in NCCL
    put(comm, message_key(comm, seq, h.rank, a.root), a.sendbuf, bytes);
    return;
  }
  Bytes acc(bytes), block(bytes);
  for (int32_t r = 0; r < h.world_size; ++r) {
    const void* contribution = a.sendbuf;
    if (r != a.root) {
      take(comm, message_key(comm, seq, r, a.root), block.data(), bytes);
      contribution = block.data();
    }
    if (r == 0) std::memcpy(acc.data(), contribution, bytes);
    else fold(a, acc.data(), contribution);
  }
  finish_reduction(a, acc.data(), h.world_size);
  std::memcpy(a.recvbuf, acc.data(), bytes);
}

void alltoall(cb_comm& comm, const cb_op_args& a, size_t bytes, uint64_t seq) {
  const cb_host_services& h = host_of(comm);
  const int32_t me = h.rank;
  // Send everything first: kv_set copies the data, so afterwards recvbuf may be overwritten
  // even when it is the same buffer as sendbuf.
  for (int32_t j = 0; j < h.world_size; ++j)
    if (j != me) put(comm, message_key(comm, seq, me, j), at(a.sendbuf, j * bytes), bytes);
  std::memmove(at(a.recvbuf, me * bytes), at(a.sendbuf, me * bytes), bytes);
  for (int32_t j = 0; j < h.world_size; ++j)
    if (j != me) take(comm, message_key(comm, seq, j, me), at(a.recvbuf, j * bytes), bytes);
}

void gather(cb_comm& comm, const cb_op_args& a, size_t bytes, uint64_t seq) {
  const cb_host_services& h = host_of(comm);
  if (h.rank != a.root) {
    put(comm, message_key(comm, seq, h.rank, a.root), a.sendbuf, bytes);
    return;
  }
  std::memmove(at(a.recvbuf, a.root * bytes), a.sendbuf, bytes);  // in place: same memory
  for (int32_t r = 0; r < h.world_size; ++r)
    if (r != a.root) take(comm, message_key(comm, seq, r, a.root), at(a.recvbuf, r * bytes), bytes);
}

void scatter(cb_comm& comm, const cb_op_args& a, size_t bytes, uint64_t seq) {
  const cb_host_services& h = host_of(comm);
  if (h.rank != a.root) {
    take(comm, message_key(comm, seq, a.root, h.rank), a.recvbuf, bytes);
    return;
  }
  for (int32_t j = 0; j < h.world_size; ++j)
    if (j != a.root) put(comm, message_key(comm, seq, a.root, j), at(a.sendbuf, j * bytes), bytes);
  std::memmove(a.recvbuf, at(a.sendbuf, a.root * bytes), bytes);  // in place: same memory
}

std::string p2p_key(const cb_comm& comm, int32_t from, int32_t to, uint32_t tag, uint64_t seq) {
  return comm.key_prefix + "p2p/" + std::to_string(from) + "->" + std::to_string(to) + "/t" +
         std::to_string(tag) + "/" + std::to_string(seq);
}

// A send completes once the store holds the data: it never waits for the receiver, so
// patterns where every rank sends before it receives (a ring) cannot deadlock.
void send(cb_comm& comm, const cb_op_args& a, size_t bytes) {
  uint64_t seq = comm.sent[{a.peer, a.tag}]++;
  put(comm, p2p_key(comm, host_of(comm).rank, a.peer, a.tag, seq), a.sendbuf, bytes);
}

// Only reserves the sequence number, at post time so receives match sends in posting order;
// try_complete() fetches the message.
void recv(cb_comm& comm, const cb_op_args& a, size_t bytes, cb_request& request) {
  uint64_t seq = comm.received[{a.peer, a.tag}]++;
  request.pending_key = p2p_key(comm, a.peer, host_of(comm).rank, a.tag, seq);
  request.recvbuf = a.recvbuf;
  request.bytes = bytes;
}

}  // namespace

void check_host(cb_status status, const char* what) {
  if (status != CB_OK)  // keep the host's code: TIMEOUT and REMOTE mean something to the core
    fail(status, std::string("host service ") + what + " failed (status " +
                              std::to_string(static_cast<int>(status)) + ")");
}

bool try_complete(cb_request& request, int32_t timeout_ms) {
  if (request.pending_key.empty()) return true;
  if (!try_take(*request.comm, request.pending_key, request.recvbuf, request.bytes, timeout_ms))
    return false;
  request.pending_key.clear();
  return true;
}

void run_operation(cb_comm& comm, const cb_op_args& given, cb_request& request) {
  const cb_host_services& h = host_of(comm);
  // The SDK's checks, against what this plugin advertises: what it cannot do is UNIMPLEMENTED
  // (the core skips the case), what nobody could do is INVALID_ARGUMENT (the core fails the run).
  const cb_op_args a = sdk::checked_op_args(given, h.rank, h.world_size, capabilities());
  if (a.op == CB_OP_BARRIER) {
    check_host(h.bootstrap_barrier(h.ctx, comm.op_timeout_ms), "bootstrap_barrier");
    return;
  }
  const size_t bytes = a.count * sdk::dtype_size(a.dtype);
  // Point-to-point ops have their own sequence numbers: they are not collective, so they must
  // not advance the counter that every rank has to agree on.
  if (a.op == CB_OP_SEND) return send(comm, a, bytes);
  if (a.op == CB_OP_RECV) return recv(comm, a, bytes, request);

  const uint64_t seq = comm.collective_seq++;
  switch (a.op) {
    case CB_OP_ALLREDUCE: return allreduce(comm, a, bytes);
    case CB_OP_ALLGATHER: return allgather(comm, a, bytes);
    case CB_OP_REDUCESCATTER: return reducescatter(comm, a, bytes, seq);
    case CB_OP_BROADCAST: return broadcast(comm, a, bytes);
    case CB_OP_REDUCE: return reduce(comm, a, bytes, seq);
    case CB_OP_ALLTOALL: return alltoall(comm, a, bytes, seq);
    case CB_OP_GATHER: return gather(comm, a, bytes, seq);
    case CB_OP_SCATTER: return scatter(comm, a, bytes, seq);
    default: fail(CB_ERR_UNIMPLEMENTED, "unsupported op");
  }
}

}  // namespace store_backend
