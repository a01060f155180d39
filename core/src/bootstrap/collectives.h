// Collectives over the bootstrap store, used to implement the ABI host services.
// All ranks must call the same sequence of collectives; keys are namespaced by `prefix` and a
// per-instance sequence number, so concurrent runs or repeated calls never collide.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/deadline.h"
#include "bootstrap/host_route.h"
#include "bootstrap/partial_reduction.h"
#include "bootstrap/store.h"

namespace commbench {

class Bootstrap {
 public:
  Bootstrap(StoreClient& store, std::string prefix, int rank, int world_size);

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }

  // A job whose ranks span hosts: allgathers, broadcasts and barriers go through each host's first
  // rank (and allgathers through a tree of hosts) instead of every rank reading from the job's
  // store (bootstrap/host_route.h). `token`: the job's store token, which the hosts' stores take
  // too. Call before any collective. kv_set/kv_get stay on the job's store.
  void route_through_hosts(HostLayout layout, std::string token);
  // Every rank calls it last, when routed through hosts: a (routed) barrier, so that no host's
  // first rank ends (and its store with it) while a rank of its host or of a host below it still
  // reads from it. Nothing to do otherwise.
  void close(Millis timeout);

  // `recv` gets world_size * bytes, rank order. Any size: an allgather whose table
  // (world_size * bytes) or a broadcast whose buffer is larger than kSliceBudget runs as several
  // of slices of at most that (the first also carries the caller's total, 8 bytes, so that ranks
  // that passed different sizes fail: every rank of an allgather, every receiver of a broadcast),
  // and no value or reply nears the store's message limit (64 MiB by default: a 2-rank job's
  // 5 million samples, or 1,100 at 8,192 ranks).
  static constexpr size_t kSliceBudget = 16u << 20;
  void allgather(const void* send, size_t bytes, void* recv, Millis timeout);
  // Every rank's `bytes` to `root` alone: `recv` (world_size * bytes, rank order) is written on
  // the root only and may be null elsewhere. For what only one rank reads (the samples): each
  // block travels to the root once (routed through hosts: by way of its host's first rank), where
  // an allgather hands each to every rank (N² blocks), and only the root holds the table. The
  // other ranks return once their block is stored, without waiting for the root (a host's first
  // rank, once it holds its host's blocks), so a rank that passed another size is refused by the
  // root (routed: when its block's size differs from its host's first rank's, by that rank, and
  // the root then times out naming the host). Sliced as allgather is, with a barrier between
  // slices (a K-slice gather takes 2K-1 sequence numbers) so that the store holds one slice at a
  // time; the other ranks wait at those barriers. Callers that need the ranks to leave together
  // add a barrier.
  void gather(const void* send, size_t bytes, void* recv, int root, Millis timeout);
  // Every rank's `count` doubles, combined element by element with `op`, to rank 0 alone (`recv`,
  // `count` doubles, is written on rank 0 only and may be null elsewhere): what rank 0 would
  // compute from a gather (the slowest rank in each iteration, a sum over ranks) without the
  // world × count table. Through one store, rank 0 reads the blocks and folds each as it arrives,
  // in rank order (a sum adds as a loop over ranks would). Routed through hosts, each host's
  // leader folds its ranks' blocks and the leaders fold up HostAgentExchange's tree: rank 0
  // receives ceil(log2 hosts) partials of `count` doubles, and a sum adds in the tree's order.
  // The other ranks return once theirs is handed on. Ranks that passed different counts fail at
  // the rank that folds them (bootstrap/partial_reduction.h), and rank 0 checks that its result
  // covers every rank. Sliced when `count` doubles (through one store: world × count) exceed
  // kSliceBudget, with a barrier between slices as for gather.
  void reduce_to_rank0(const double* send, size_t count, double* recv, ReduceOp op, Millis timeout);
  void broadcast(void* buffer, size_t bytes, int root, Millis timeout);
  // Every rank learns the lowest rank that passed true, or -1: "did any rank fail?" in O(world)
  // store work (a gather of flags to rank 0, then a broadcast), where an allgather of the flags
  // moves world² of them. Costs two collectives' round trips instead of one. When rank 0's gather
  // times out it still broadcasts that, with the first rank it missed, and the others fail naming
  // (and recording) that rank rather than rank 0 (routed, rank 0 knows only hosts: the missing
  // rank's leader names it, and the others name nobody).
  int first_rank_that(bool mine, Millis timeout);
  void barrier(Millis timeout);
  // Run-scoped key/value (plugins' kv_set/kv_get): keys are prefixed, values opaque.
  void kv_set(const std::string& key, const Bytes& value);
  Bytes kv_get(const std::string& key, Millis timeout);

  StoreClient& store() { return store_; }
  const std::string& prefix() const { return prefix_; }

  // Where to record the ranks the last collective waited for in vain: filled when an allgather,
  // a gather or a broadcast times out with ranks missing (a routed gather's root knows only the
  // hosts that are missing, and records none), cleared when a collective starts. The worker
  // reports them with its error, so the agent blames the rank that never arrived, not the ones
  // that gave up waiting for it (agent/execution_monitor.cpp).
  void record_missing_ranks_in(std::vector<int>* out) { missing_out_ = out; }

 private:
  std::string next_key(const char* what);
  // Runs `one` once, or as slices when world_size * bytes is over kSliceBudget; `recv` null: this
  // rank receives nothing (a gather's other ranks). `paced`: a barrier between slices, for a
  // gather, whose other ranks would otherwise store every slice at once (N × bytes in the store).
  void in_slices(const char* what, const void* send, size_t bytes, void* recv, Millis timeout,
                 const std::function<void(const void*, size_t, void*, Millis)>& one, bool paced = false);
  void allgather_one(const void* send, size_t bytes, void* recv, Millis timeout);
  void gather_one(const void* send, size_t bytes, void* recv, int root, Millis timeout);
  // Reads every rank's "<base><rank>" but `skip`'s, in rank order, checks its size against
  // `bytes` (kAnySize: the sink checks) and hands it to `sink`; a timeout names the ranks that
  // never wrote theirs (and records them, see record_missing_ranks_in).
  static constexpr size_t kAnySize = SIZE_MAX;
  using BlockSink = std::function<void(int rank, const uint8_t* data, size_t size)>;
  void read_blocks(const char* what, uint64_t seq, const std::string& base, int skip, size_t bytes,
                   const BlockSink& sink, Millis timeout, const Deadline& deadline);
  void reduce_one(const double* send, size_t count, uint64_t total, double* recv, ReduceOp op, Millis timeout);
  void broadcast_one(void* buffer, size_t bytes, int root, Millis timeout);
  StoreClient& store_;
  std::string prefix_;
  int rank_;
  int world_size_;
  uint64_t seq_ = 0;
  std::vector<int>* missing_out_ = nullptr;
  std::unique_ptr<HostRoute> route_;
};

}  // namespace commbench
