// Key layout, under the route's prefix:
//   job store:       what HostAgentExchange keeps there (leaders' addresses, hosts' blocks)
//   a leader's store: "<prefix>/loc/<seq>/<rank>"  the host's other ranks' blocks; the leader
//                                                  reads and deletes them
//                     "<prefix>/hag/<seq>/table"   the rank-ordered table, and its "done"
//                                                  counter: the last reader deletes both
//                     "<prefix>/gl/<seq>/<rank>"   a gather's blocks from the host's other ranks
//                     "<prefix>/rl/<seq>/<rank>"   a reduction's partials from the host's other ranks
//                                                  (host_route_reduce.cpp; the leaders' partials go
//                                                  up the tree, bootstrap/host_tree.h)
//   job store:       "<prefix>/ga/<seq>/<host>"   a gather's blocks of one host, from its leader;
//                                                  the root reads and deletes them
//   either store:     "<prefix>/bc/<seq>/value"    a broadcast's bytes (the job's store: for the
//                                                  leaders; a leader's: for its host's ranks), and
//                     "<prefix>/bc/<seq>/up"       from a root that is not its host's leader, to it
//                     "<prefix>/bar/<seq>/..."     a barrier: "arrived", "open", "done" in the job's
//                                                  store among the leaders; "arrived", "here",
//                                                  "open", "done", "read" in each leader's store
// A host's blocks travel as: u32 count, u64 block size, count × u32 rank, then the count blocks in
// that order. The size lets host 0 refuse a host whose ranks all passed another size instead of
// reading its blocks at the wrong stride.
#include "bootstrap/host_route.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "bootstrap/byte_codec.h"
#include "bootstrap/deadline.h"
#include "bootstrap/host_tree.h"
#include "bootstrap/missing_keys.h"
#include "bootstrap/wire_protocol.h"

namespace commbench {
namespace {

Millis left(const Deadline& d) { return Millis(d.remaining_ms()); }  // -1: no limit

// How long, at least, a leader waits for its host's ranks to see an opened barrier.
constexpr int64_t kSeeOpenMs = 5000;

// A counter's value, or 0 when nobody has added to it yet (for timeout messages).
int64_t counter(StoreClient& store, const std::string& key) {
  int64_t n = 0;
  try {
    if (store.check(key)) wire::decode_counter(store.get(key, Millis(0)), n);
  } catch (const StoreError&) {
  }
  return n;
}

}  // namespace

HostRoute::HostRoute(StoreClient& job_store, std::string prefix, int rank, int world, HostLayout layout,
                     std::string token)
    : job_store_(job_store),
      prefix_(std::move(prefix)),
      rank_(rank),
      world_(world),
      layout_(std::move(layout)),
      token_(std::move(token)) {
  bool mine = false;
  for (int r : layout_.ranks) {
    if (r < 0 || r >= world_)
      throw std::invalid_argument(fmt::format("host route: rank {} of this host is outside a world of {}", r, world_));
    mine |= r == rank_;
  }
  if (!mine || layout_.hosts < 1 || layout_.index < 0 || layout_.index >= layout_.hosts)
    throw std::invalid_argument(fmt::format("host route: rank {} is not among its host's ranks, or host {} is "
                                            "outside {} hosts",
                                            rank_, layout_.index, layout_.hosts));
}

HostRoute::~HostRoute() = default;

void HostRoute::connect(Millis timeout, std::vector<int>* missing) {
  const auto deadline = Deadline::after(timeout);
  const int local_readers = static_cast<int>(layout_.ranks.size()) - 1;
  if (leader()) {
    StoreServerOptions so;
    so.bind_host = job_store_.local_address();
    so.token = token_;
    if (so.bind_host.empty())
      throw StoreError(StoreError::Code::Connection,
                       fmt::format("rank {} leads host {} but cannot tell which of its addresses reaches the "
                                   "job's store, so it has nowhere to serve its host's ranks",
                                   rank_, layout_.index));
    // All or nothing: a failed start leaves no half-made route for the next call to trip on.
    auto own = StoreServer::start(so);
    auto own_client = StoreClient::connect(own->host(), own->port(), left(deadline), token_);
    auto exchange = std::make_unique<HostAgentExchange>(job_store_, *own, own->host(), prefix_, layout_.index,
                                                        layout_.hosts, token_, local_readers);
    exchange->rendezvous(left(deadline));
    own_ = std::move(own);
    own_client_ = std::move(own_client);
    exchange_ = std::move(exchange);
    return;
  }
  const int leader_rank = layout_.ranks.front();
  const std::string key = HostAgentExchange::address_key(prefix_, layout_.index);
  Bytes where;
  try {
    where = job_store_.get(key, left(deadline));
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout) throw;
    if (missing) missing->push_back(leader_rank);
    throw StoreError(StoreError::Code::Timeout,
                     fmt::format("rank {} waited {} ms for rank {}, the first rank on its host, to publish "
                                 "its store; is that rank alive?",
                                 rank_, timeout.count(), leader_rank),
                     e.missing_keys());
  }
  const auto address = HostAgentExchange::parse_address(where);
  if (!address)
    throw StoreError(StoreError::Code::Protocol,
                     fmt::format("rank {} published '{}' as its store's address; expected '<port> <local "
                                 "readers> <host>'",
                                 leader_rank, std::string(where.begin(), where.end())));
  leader_store_ = StoreClient::connect(address->host, address->port, left(deadline), token_);
}

void HostRoute::allgather(const void* send, size_t bytes, void* recv, Millis timeout, std::vector<int>* missing) {
  const auto deadline = Deadline::after(timeout);
  if (!own_client_ && !leader_store_) connect(timeout, missing);
  const uint64_t seq = seq_++;
  const std::string local = fmt::format("{}/loc/{}/", prefix_, seq);
  const size_t table_bytes = bytes * static_cast<size_t>(world_);
  if (leader()) {
    const Bytes blocks = gather_host(local, send, bytes, left(deadline), missing, "allgather");
    const auto table = exchange_->allgather(
        blocks, left(deadline), [&](Bytes gathered) { return put_in_rank_order(gathered, bytes, "allgather"); });
    if (table->size() != table_bytes)
      throw StoreError(StoreError::Code::Protocol,
                       fmt::format("host allgather #{} under '{}': the table has {} bytes, {} ranks × {} "
                                   "expected; did every rank pass the same size?",
                                   seq, prefix_, table->size(), world_, bytes));
    if (table_bytes > 0) std::memcpy(recv, table->data(), table_bytes);
    return;
  }
  const auto* p = static_cast<const uint8_t*>(send);
  leader_store_->set(local + std::to_string(rank_), Bytes(p, p + bytes));
  const std::string base = HostAgentExchange::table_prefix(prefix_, seq);
  Bytes table;
  try {
    table = leader_store_->get(base + "table", left(deadline));
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout) throw;
    throw StoreError(StoreError::Code::Timeout,
                     fmt::format("host allgather #{} under '{}' timed out after {} ms: rank {} (the first "
                                 "rank on this host) did not hand out the table; a rank on this or another "
                                 "host may have died, hung, or called a different sequence of collectives",
                                 seq, prefix_, timeout.count(), layout_.ranks.front()),
                     e.missing_keys());
  }
  if (table.size() != table_bytes)
    throw StoreError(StoreError::Code::Protocol,
                     fmt::format("host allgather #{} under '{}': rank {} contributed {} bytes but the table "
                                 "has {} for {} ranks; every rank must pass the same size",
                                 seq, prefix_, rank_, bytes, table.size(), world_));
  if (table_bytes > 0) std::memcpy(recv, table.data(), table_bytes);
  const int readers = HostAgentExchange::readers(layout_.index, layout_.hosts,
                                                 static_cast<int>(layout_.ranks.size()) - 1);
  if (leader_store_->add(base + "done", 1) == readers) leader_store_->delete_prefix(base);
}

void HostRoute::gather(const void* send, size_t bytes, void* recv, int root, Millis timeout,
                       std::vector<int>* missing) {
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = gather_seq_++;  // taken first: a failed connect still keeps this rank in step
  if (!own_client_ && !leader_store_) connect(timeout, missing);
  const std::string local = fmt::format("{}/gl/{}/", prefix_, seq);
  const std::string base = fmt::format("{}/ga/{}/", prefix_, seq);
  if (!leader()) {
    const auto* p = static_cast<const uint8_t*>(send);
    try {
      leader_store_->set(local + std::to_string(rank_), Bytes(p, p + bytes));
    } catch (const StoreError& e) {
      if (e.code() == StoreError::Code::Connection) leader_gone(e, fmt::format("gather #{}", seq));
      throw;
    }
  } else {
    job_store_.set(base + std::to_string(layout_.index), gather_host(local, send, bytes, left(deadline), missing, "gather"));
  }
  if (rank_ != root) return;
  // Each host's blocks, as gather_host laid them out, one after another: put_in_rank_order's input.
  Bytes gathered;
  std::vector<std::string> keys;
  for (int h = 0; h < layout_.hosts; ++h) keys.push_back(base + std::to_string(h));
  try {
    job_store_.multi_get_each(keys, left(deadline), [&](size_t, const uint8_t* data, size_t size) {
      gathered.insert(gathered.end(), data, data + size);
    });
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout || e.missing_keys().empty()) throw;
    throw StoreError(StoreError::Code::Timeout,
                     fmt::format("gather #{} under '{}' timed out after {} ms at root rank {}: {} not sent its "
                                 "ranks' blocks (a host's first rank sends them once all its ranks have); a rank "
                                 "there may have crashed or hung, or called a different sequence of bootstrap "
                                 "collectives",
                                 seq, prefix_, timeout.count(), rank_, describe_missing(e.missing_keys(), "host")),
                     e.missing_keys());
  }
  job_store_.delete_prefix(base);
  const Bytes table = put_in_rank_order(gathered, bytes, "gather");
  if (!table.empty()) std::memcpy(recv, table.data(), table.size());
}

void HostRoute::broadcast(void* buffer, size_t bytes, int root, Millis timeout, std::vector<int>* missing) {
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = sync_seq_++;  // taken first: a failed connect still keeps this rank in step
  if (!own_client_ && !leader_store_) connect(timeout, missing);
  const std::string base = fmt::format("{}/bc/{}/", prefix_, seq);
  const bool root_here = std::find(layout_.ranks.begin(), layout_.ranks.end(), root) != layout_.ranks.end();
  // The host's ranks that read the value from the leader's store: all but the leader and the root.
  const int local_readers = locals() - 1 - (root_here && root != layout_.ranks.front() ? 1 : 0);
  const auto timed_out = [&](const StoreError& e, const std::string& who) {
    if (e.code() != StoreError::Code::Timeout) throw;  // called in a handler: rethrows `e` itself
    throw StoreError(StoreError::Code::Timeout,
                     fmt::format("broadcast #{} under '{}' timed out after {} ms: {}; is it alive? (It may have "
                                 "crashed or hung, or called a different sequence of bootstrap collectives.)",
                                 seq, prefix_, timeout.count(), who),
                     e.missing_keys());
  };
  const auto check_size = [&](const Bytes& value) {
    if (value.size() != bytes)
      throw StoreError(StoreError::Code::Protocol,
                       fmt::format("broadcast #{} under '{}': root rank {} sent {} bytes, rank {} expects {}; "
                                   "every rank must pass the same size",
                                   seq, prefix_, root, value.size(), rank_, bytes));
  };
  const auto* p = static_cast<const uint8_t*>(buffer);
  if (!leader()) {
    Bytes value;
    try {
      if (rank_ == root) {  // handed to the leader, which alone talks to the job's store
        leader_store_->set(base + "up", Bytes(p, p + bytes));
        return;
      }
      try {
        value = leader_store_->get(base + "value", left(deadline));
      } catch (const StoreError& e) {
        // As in the star: the rank waited for is the root (its leader, if it is the one that
        // failed, is blamed by its own agent).
        if (e.code() == StoreError::Code::Timeout && missing) missing->push_back(root);
        timed_out(e, fmt::format("rank {} (the first rank on this host) did not hand on root rank {}'s bytes",
                                 layout_.ranks.front(), root));
      }
      try {
        if (leader_store_->add(base + "done", 1) == local_readers) leader_store_->delete_prefix(base);
      } catch (const StoreError& e) {
        // The value has arrived. A leader that went away since (it failed after handing the value
        // on: first_rank_that's verdict) took its store, and these keys, with it.
        if (e.code() != StoreError::Code::Connection) throw;
      }
    } catch (const StoreError& e) {
      if (e.code() == StoreError::Code::Connection) leader_gone(e, fmt::format("broadcast #{}", seq));
      throw;
    }
    check_size(value);
    if (bytes > 0) std::memcpy(buffer, value.data(), bytes);
    return;
  }
  Bytes value;
  if (rank_ == root) {
    value.assign(p, p + bytes);
  } else {
    try {
      // From the root's own rank on this host, or from the root's leader through the job's store.
      value = root_here ? own_client_->get(base + "up", left(deadline)) : job_store_.get(base + "value", left(deadline));
    } catch (const StoreError& e) {
      if (e.code() == StoreError::Code::Timeout && missing) missing->push_back(root);
      timed_out(e, fmt::format("root rank {} has not arrived", root));
    }
  }
  if (root_here) {
    job_store_.set(base + "value", value);
    if (rank_ != root) own_client_->delete_prefix(base + "up");
  } else if (job_store_.add(base + "done", 1) == layout_.hosts - 1) {
    job_store_.delete_prefix(base);  // every leader but the root's has read it
  }
  // Handed on before the size is checked: this host's ranks check their own, and fail with their
  // own message rather than a timeout.
  if (local_readers > 0) own_->set(base + "value", value);
  check_size(value);
  if (bytes > 0 && rank_ != root) std::memcpy(buffer, value.data(), bytes);
}

void HostRoute::barrier(Millis timeout) {
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = sync_seq_++;  // taken first: a failed connect still keeps this rank in step
  if (!own_client_ && !leader_store_) connect(timeout, nullptr);
  const std::string base = fmt::format("{}/bar/{}/", prefix_, seq);
  const int others = locals() - 1;  // the host's ranks besides the leader
  // Waits for `key`; a timeout says what `why()` (called then) finds.
  const auto wait = [&](StoreClient& store, const std::string& key, Millis limit, const auto& why) {
    try {
      store.get(base + key, limit);
    } catch (const StoreError& e) {
      if (e.code() != StoreError::Code::Timeout) throw;
      throw StoreError(StoreError::Code::Timeout,
                       fmt::format("barrier #{} under '{}' timed out after {} ms: {}", seq, prefix_,
                                   timeout.count(), why()),
                       e.missing_keys());
    }
  };
  if (!leader()) {
    try {
      if (leader_store_->add(base + "arrived", 1) == others) leader_store_->set(base + "here", {});
      wait(*leader_store_, "open", left(deadline), [&] {
        return fmt::format("rank {} (the first rank on this host) did not open it; ranks on this or other hosts "
                           "are slow, hung or dead, or called a different sequence of bootstrap collectives",
                           layout_.ranks.front());
      });
      // The last to leave tells the leader, which may then end with its store (Bootstrap::close).
      if (leader_store_->add(base + "done", 1) == others) leader_store_->set(base + "read", {});
    } catch (const StoreError& e) {
      if (e.code() == StoreError::Code::Connection) leader_gone(e, fmt::format("barrier #{}", seq));
      throw;
    }
    return;
  }
  if (others > 0)
    wait(*own_client_, "here", left(deadline), [&] {
      return fmt::format("only {} of the {} ranks of host {} arrived; the others are slow, hung or dead, or called "
                         "a different sequence of bootstrap collectives",
                         1 + counter(*own_client_, base + "arrived"), locals(), layout_.index);
    });
  // The leaders meet on the job's store.
  if (job_store_.add(base + "arrived", 1) == layout_.hosts) job_store_.set(base + "open", {});
  wait(job_store_, "open", left(deadline), [&] {
    return fmt::format("only {} of {} hosts arrived (a host arrives when all its ranks have); the others are slow, "
                       "hung or dead, or called a different sequence of bootstrap collectives",
                       counter(job_store_, base + "arrived"), layout_.hosts);
  });
  if (job_store_.add(base + "done", 1) == layout_.hosts) job_store_.delete_prefix(base);
  if (others == 0) return;
  own_->set(base + "open", {});
  // The barrier has opened: the host's ranks only have to see it. A deadline that ran out while
  // the leaders met still leaves them a moment, rather than failing a barrier that succeeded.
  const int64_t rest = deadline.remaining_ms();
  wait(*own_client_, "read", Millis(rest < 0 ? -1 : std::max<int64_t>(rest, kSeeOpenMs)), [&] {
    return fmt::format("the barrier opened, but only {} of the other {} ranks of host {} saw it open before the "
                       "deadline; they are slow, hung or dead",
                       counter(*own_client_, base + "done"), others, layout_.index);
  });
  own_client_->delete_prefix(base);
}

void HostRoute::leader_gone(const StoreError& e, const std::string& during) const {
  throw StoreError(StoreError::Code::Connection,
                   fmt::format("{} under '{}': rank {} (the first rank on this host) went away while rank {} "
                               "waited for it ({}); it failed or timed out first, and its own error says why",
                               during, prefix_, layout_.ranks.front(), rank_, e.what()));
}

Bytes HostRoute::gather_host(const std::string& local, const void* send, size_t bytes, Millis timeout,
                             std::vector<int>* missing, const char* what) {
  const auto count = layout_.ranks.size();
  Bytes blocks;
  blocks.reserve(12 + 4 * count + bytes * count);
  wire::ByteWriter w(blocks);
  w.u32(static_cast<uint32_t>(count));
  w.u64(bytes);
  for (int r : layout_.ranks) w.u32(static_cast<uint32_t>(r));
  w.raw(send, bytes);  // the leader is the host's first rank
  read_host_ranks(local, timeout, missing, what, [&](int r, const uint8_t* data, size_t size) {
    if (size != bytes)
      throw StoreError(StoreError::Code::Protocol,
                       fmt::format("host {} under '{}': rank {} contributed {} bytes, rank {} {}; "
                                   "every rank must pass the same size",
                                   what, prefix_, r, size, rank_, bytes));
    w.raw(data, size);
  });
  return blocks;
}

void HostRoute::read_host_ranks(const std::string& local, Millis timeout, std::vector<int>* missing,
                                const char* what, const RankSink& sink, size_t per_get) {
  const auto count = layout_.ranks.size();
  if (count == 1) return;
  std::vector<std::string> keys;
  for (size_t i = 1; i < count; ++i) keys.push_back(local + std::to_string(layout_.ranks[i]));
  try {
    partial::read_each(*own_client_, keys, per_get, timeout, [&](size_t i, const uint8_t* data, size_t size) {
      sink(layout_.ranks[i + 1], data, size);
    });
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout || e.missing_keys().empty()) throw;
    if (missing)
      for (const std::string& key : e.missing_keys()) missing->push_back(std::stoi(key.substr(key.rfind('/') + 1)));
    throw StoreError(StoreError::Code::Timeout,
                     fmt::format("host {} under '{}' timed out after {} ms on host {}: {} not arrived; "
                                 "{} (It may have crashed or hung, or called a different sequence "
                                 "of bootstrap collectives.)",
                                 what, prefix_, timeout.count(), layout_.index,
                                 describe_missing(e.missing_keys(), "rank"), alive_question(e.missing_keys().size())),
                     e.missing_keys());
  }
  own_client_->delete_prefix(local);
}

Bytes HostRoute::put_in_rank_order(const Bytes& gathered, size_t bytes, const char* what) const {
  Bytes table(bytes * static_cast<size_t>(world_));
  std::vector<bool> seen(static_cast<size_t>(world_), false);
  size_t placed = 0;
  wire::ByteReader in(gathered);
  auto malformed = [&](const std::string& problem) {
    return StoreError(StoreError::Code::Protocol,
                      fmt::format("host {} under '{}': the hosts' blocks do not add up to one block "
                                  "per rank ({}); do all hosts run the same commbench?",
                                  what, prefix_, problem));
  };
  while (!in.at_end()) {
    uint32_t count = 0;
    uint64_t size = 0;
    if (!in.u32(count) || !in.u64(size) || count == 0 || count > in.remaining() / 4) throw malformed("a bad rank count");
    std::vector<uint32_t> ranks(count);
    for (auto& r : ranks) {
      in.u32(r);
      if (r >= static_cast<uint32_t>(world_) || seen[r]) throw malformed(fmt::format("rank {} twice or out of range", r));
      seen[r] = true;
    }
    if (size != bytes)
      throw StoreError(StoreError::Code::Protocol,
                       fmt::format("host {} under '{}': the host of rank {} contributed {}-byte blocks, "
                                   "rank {} {}; every rank must pass the same size",
                                   what, prefix_, ranks.front(), size, rank_, bytes));
    if (bytes > 0 && in.remaining() / bytes < count) throw malformed("a host sent fewer bytes than its ranks need");
    for (uint32_t r : ranks) {
      std::span<const uint8_t> block;
      in.view(bytes, block);  // the length was checked above
      if (bytes > 0) std::memcpy(table.data() + r * bytes, block.data(), bytes);
      ++placed;
    }
  }
  if (placed != static_cast<size_t>(world_)) throw malformed(fmt::format("{} of {} ranks", placed, world_));
  return table;
}

}  // namespace commbench
