// The shared-memory segment the ranks of one simulated communicator share (named after the
// ncclUniqueId): who joined, a barrier counter per rank, each rank's current op descriptor, one
// staging slot per rank for collectives and one ring of chunks per (sender, receiver) pair for p2p.
// Everything is lock-free atomics in shared memory; waiting is polling with back-off, always bounded
// by a watchdog, aborts and dead-peer checks, so no rank can block forever without a way out.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace simgpu {

constexpr int kMaxRanks = 64;
constexpr int kP2pSlots = 2;

// One op as every rank must agree on it (collectives): checked across ranks before data moves.
struct WireOp {
  uint64_t seq;       // collective number on this communicator
  int32_t kind;
  int32_t dtype;
  int32_t redop;
  int32_t root;
  uint64_t count;
  uint64_t counts[kMaxRanks];  // alltoallv: this rank's sendcounts
};

struct RankInfo {
  std::atomic<int32_t> present;  // 1 once the fields below are written
  int32_t pid;
  int32_t nranks;
  int32_t physical;   // physical device index
  int32_t cuda_dev;   // visible ordinal
  char host[96];      // host identity for "Duplicate GPU detected"
  std::atomic<uint64_t> barrier;
  WireOp op;
  char doing[160];    // what this rank is executing (for watchdog messages)
};

struct ChunkMeta {
  uint64_t msg_seq;
  uint64_t bytes_total;
  int32_t dtype;
  uint64_t count;
  uint64_t len;
};

struct ChannelHdr {
  std::atomic<uint64_t> head;  // chunks written by the sender
  std::atomic<uint64_t> tail;  // chunks consumed by the receiver
  ChunkMeta meta[kP2pSlots];
};

struct ShmHeader {
  std::atomic<int32_t> nranks;
  std::atomic<int32_t> error;       // first failure (ncclResult_t) seen by any rank, 0 if none
  std::atomic<int32_t> error_lock;
  char error_msg[512];
  RankInfo rank[kMaxRanks];
};

struct ShmLayout {
  size_t slot_bytes;     // per-rank collective staging
  size_t chunk_bytes;    // per p2p chunk
  size_t slots_offset, channels_offset, data_offset, total;
  static ShmLayout for_ranks(int nranks);
};

}  // namespace simgpu
