// A job's allgather when its ranks span hosts (docs/bootstrap.md, "Host tree"; measured in
// docs/scaling.md). Through the job's store alone, N ranks each receive N blocks: N² bytes through
// one process. Here each host's lowest rank, its leader, speaks for the host:
//   1. the leader starts a store of its own (the job's token, on the address through which it
//      reaches the job's store) and publishes it; the host's other ranks put their blocks there;
//   2. the leader sends its host's blocks, with their ranks, to the job's store as one key, and
//      the hosts combine through HostAgentExchange (bootstrap/host_tree.h): host 0 puts every
//      rank's block in rank order, and that table goes down a binomial tree of the leaders' stores;
//   3. the host's other ranks read the table from their leader's store.
// The job's store then sees H keys per allgather instead of N, and each host receives the
// N-block table once. Hosts need not hold contiguous ranks (srun --distribution=cyclic).
// Broadcasts and barriers go the same way: the leaders meet on the job's store (H messages, not
// N), and each leader serves its host's ranks from its own store.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/partial_reduction.h"
#include "bootstrap/store.h"

namespace commbench {

class HostAgentExchange;

// Where a rank's host stands in its world (AgentGroup::host_place): hosts are numbered in the
// order of their lowest rank.
struct HostLayout {
  int index = 0;
  int hosts = 1;
  std::vector<int> ranks;  // this host's ranks in the world, ascending (this rank among them)
};

class HostRoute {
 public:
  // `prefix`: where its keys live, in the job's store and the leaders' stores. Throws
  // std::invalid_argument when `layout` does not hold `rank`.
  HostRoute(StoreClient& job_store, std::string prefix, int rank, int world, HostLayout layout, std::string token);
  ~HostRoute();

  // Every rank of the world calls it, with the same `bytes`; `recv` gets world × bytes in rank
  // order. `missing`, when given, receives the ranks of this host that never sent their block.
  void allgather(const void* send, size_t bytes, void* recv, Millis timeout, std::vector<int>* missing);
  // Every rank's block to `root` alone (`recv`, world × bytes in rank order, is written on the root
  // only): the host's ranks hand their blocks to their leader, each leader puts its host's blocks
  // in the job's store as one key, and the root reads those H keys. The other ranks return once
  // their block is handed on; a leader, once it holds its host's. `missing`: as for allgather.
  void gather(const void* send, size_t bytes, void* recv, int root, Millis timeout, std::vector<int>* missing);
  // Bootstrap::reduce_to_rank0's one slice, `partial` being this rank's (bootstrap/
  // partial_reduction.h): the host's ranks hand theirs to their leader, which folds them into its
  // own, and the leaders' partials go up HostAgentExchange's tree to host 0, whose leader is rank
  // 0. Returns the whole on rank 0 and nothing elsewhere; the others return once theirs is handed
  // on (host_route_reduce.cpp). `missing`: as for allgather.
  // `reply_budget`: the most bytes of partials one read from a store may bring back.
  Bytes reduce(Bytes partial, ReduceOp op, size_t reply_budget, Millis timeout, std::vector<int>* missing);
  // `root`'s bytes to every rank: the root's leader puts them in the job's store, the other
  // leaders read them there, and each host's ranks read them from their leader. `missing` gets
  // the root when this rank waited for it (or for its bytes) in vain.
  void broadcast(void* buffer, size_t bytes, int root, Millis timeout, std::vector<int>* missing);
  // The host's ranks meet at their leader, the leaders on the job's store. A leader returns only
  // once its host's ranks have all seen the barrier open, so that after the last barrier
  // (Bootstrap::close) it can end, and its store with it, while nobody still reads from it.
  void barrier(Millis timeout);

 private:
  bool leader() const { return rank_ == layout_.ranks.front(); }
  int locals() const { return static_cast<int>(layout_.ranks.size()); }
  void connect(Millis timeout, std::vector<int>* missing);
  [[noreturn]] void leader_gone(const StoreError& e, const std::string& during) const;
  // `what`: "allgather" or "gather", for messages.
  Bytes gather_host(const std::string& local, const void* send, size_t bytes, Millis timeout,
                    std::vector<int>* missing, const char* what);
  Bytes put_in_rank_order(const Bytes& gathered, size_t bytes, const char* what) const;
  // A leader's read of what its host's other ranks put under `local` in its store, in their order
  // and at most `per_get` values a round trip, each handed to `sink`; then deletes them. A timeout
  // names the ranks that never put theirs (and adds them to `missing`).
  using RankSink = std::function<void(int rank, const uint8_t* data, size_t size)>;
  void read_host_ranks(const std::string& local, Millis timeout, std::vector<int>* missing, const char* what,
                       const RankSink& sink, size_t per_get = SIZE_MAX);

  StoreClient& job_store_;
  std::string prefix_;
  int rank_;
  int world_;
  HostLayout layout_;
  std::string token_;
  uint64_t seq_ = 0;  // allgathers: in step with the exchange's own count, which names the tables
  uint64_t sync_seq_ = 0;  // broadcasts and barriers
  uint64_t gather_seq_ = 0;  // gathers
  uint64_t reduce_seq_ = 0;  // reductions
  // The leader's store and its own client of it (to read its host's blocks); the exchange.
  std::unique_ptr<StoreServer> own_;
  std::unique_ptr<StoreClient> own_client_;
  std::unique_ptr<HostAgentExchange> exchange_;
  // The other ranks: their leader's store.
  std::unique_ptr<StoreClient> leader_store_;
};

}  // namespace commbench
