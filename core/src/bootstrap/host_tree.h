// The allgather of jobs with thousands of hosts (docs/bootstrap.md, "Host tree"; measured in
// docs/scaling.md).
//
// A star through one store delivers N × block bytes to each of N ranks: N² through one process.
// Here one agent per host speaks for its local ranks instead, and the agents combine through a
// binomial tree of their own stores:
//   1. each agent SETs its host's blocks (its ranks', in rank order) in the job's store: one key
//      per host, N × block bytes in all;
//   2. host 0's agent multi-gets those H keys (one round trip) and keeps the table in its store;
//   3. every other agent GETs the table from its parent's store and, when it has children, keeps
//      it in its own store for them; it hands the table to its local ranks.
// No store sends the table more than ceil(log2 H) times, the job's store sees H connections and
// H small keys instead of N, and the table reaches the last host after ceil(log2 H) hops.
// Agent-to-agent connections use the job's token, like every store connection.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/store.h"

namespace commbench {

// Binomial tree over hosts 0 .. hosts-1 rooted at 0: the parent of h is h with its lowest set bit
// cleared, so host h is popcount(h) hops from the root and no host is more than ceil(log2 hosts).
int binomial_parent(int host);
std::vector<int> binomial_children(int host, int hosts);

class HostAgentExchange {
 public:
  // `job_store`: this agent's client of the job's store (host 0's agent hosts it, and there it is
  // also `own_store`). `own_store`: the store this agent hosts for the agents below it, reachable
  // at `advertised_host`:own_store.port(). Keys live under `prefix`. One thread at a time.
  // `local_readers`: how many of this host's own ranks also read each table from `own_store`
  // (a job's workers, bootstrap/host_route.h); they count as readers like the children do.
  HostAgentExchange(StoreClient& job_store, StoreServer& own_store, std::string advertised_host,
                    std::string prefix, int host, int hosts, std::string token, int local_readers = 0);
  ~HostAgentExchange();

  int host() const { return host_; }
  int hosts() const { return hosts_; }

  // Publishes where this agent's store listens and connects to the parent's (waiting for it to
  // publish). Every agent calls it once before its first allgather.
  void rendezvous(Millis timeout);

  // Every agent calls it with its local ranks' blocks, in rank order (hosts hold contiguous,
  // ascending ranks; hosts may hold different numbers of ranks). Returns every host's bytes in
  // host order, i.e. every rank's block in rank order, shared (not copied) with this agent's
  // store while its children read it. Throws StoreError(Timeout) naming the hosts that never
  // arrived (host 0) or the parent that never handed the table on.
  // `assemble`, when given, turns host 0's concatenation of the hosts' bytes into the table that
  // goes down the tree (a job's workers put ranks in rank order there, whatever their hosts).
  using Assemble = std::function<Bytes(Bytes gathered)>;
  std::shared_ptr<const Bytes> allgather(const Bytes& host_blocks, Millis timeout, const Assemble& assemble = {});

  // The other way, toward host 0 (Bootstrap::reduce_to_rank0): this agent waits for its
  // children's partial results in its own store (read through `own_client`), folds each into
  // `partial` with `absorb` (which throws on one it cannot take), and puts the result in its
  // parent's store. Returns the whole on host 0 and nothing elsewhere. No store receives more
  // than ceil(log2 hosts) children's partials, and the job's store none. Throws StoreError(Timeout) naming
  // the children that never sent theirs (each is late itself or waits for a host below it).
  using Absorb = std::function<void(Bytes& partial, const uint8_t* data, size_t size, int child)>;
  // `per_get`: the most partials one read brings back (the store's reply limit).
  Bytes reduce(Bytes partial, StoreClient& own_client, const Absorb& absorb, size_t per_get, Millis timeout);

  // Where the table of allgather number `seq` is kept in a host's store, and how many read it
  // there: the host's children and its local readers. Each reader ADDs 1 to done_key(); the one
  // that reaches readers() deletes the prefix (table_prefix).
  static std::string table_prefix(const std::string& prefix, uint64_t seq);
  // The job-store key where host h's store address is published, and that value read back.
  struct StoreAddress {
    std::string host;
    uint16_t port = 0;
    int local_readers = 0;
  };
  static std::string address_key(const std::string& prefix, int host);
  static std::optional<StoreAddress> parse_address(const Bytes& published);
  static int readers(int host, int hosts, int local_readers);

 private:
  Bytes gather_at_root(const std::string& base, Millis timeout);
  Bytes fetch_from_parent(const std::string& base, Millis timeout);

  StoreClient& job_store_;
  StoreServer& own_store_;
  std::string advertised_host_;
  std::string prefix_;
  int host_;
  int hosts_;
  std::string token_;
  int local_readers_;
  std::unique_ptr<StoreClient> parent_store_;
  int parent_local_readers_ = 0;  // published by the parent with its address
  uint64_t seq_ = 0;
  uint64_t reduce_seq_ = 0;
};

}  // namespace commbench
