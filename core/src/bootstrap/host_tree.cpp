// Key layout, under the exchange's prefix:
//   job store:  "<prefix>/agents/<h>"           where host h's store listens, and how many of
//                                               its local ranks read its tables
//                                               ("<port> <local readers> <host>")
//               "<prefix>/hag/<seq>/blk/<h>"    host h's blocks; host 0 reads and deletes them
//   host h's store: "<prefix>/hrd/<seq>/<child>"   a reduction's partial from each child; h reads
//                                               and deletes them
//                   "<prefix>/hag/<seq>/table"  the gathered table, for h's children
//                   "<prefix>/hag/<seq>/done"   readers (children, local ranks) that have read
//                                               it; the last deletes both
// Agent addresses stay for the run; the agent deletes the run's whole prefix when it ends.
#include "bootstrap/host_tree.h"

#include <charconv>
#include <stdexcept>

#include <fmt/format.h>

#include "bootstrap/deadline.h"
#include "bootstrap/missing_keys.h"
#include "bootstrap/partial_reduction.h"

namespace commbench {
int binomial_parent(int host) {
  if (host <= 0) return -1;
  return host & (host - 1);
}

std::vector<int> binomial_children(int host, int hosts) {
  std::vector<int> children;
  // Host h's children are h + 2^k for every 2^k below h's lowest set bit (every 2^k for the root).
  const unsigned lowest = host == 0 ? 1u << 30 : static_cast<unsigned>(host & -host);
  for (unsigned step = 1; step < lowest; step <<= 1) {
    const long child = static_cast<long>(host) + step;
    if (child >= hosts) break;
    children.push_back(static_cast<int>(child));
  }
  return children;
}

HostAgentExchange::HostAgentExchange(StoreClient& job_store, StoreServer& own_store,
                                     std::string advertised_host, std::string prefix, int host,
                                     int hosts, std::string token, int local_readers)
    : job_store_(job_store),
      own_store_(own_store),
      advertised_host_(std::move(advertised_host)),
      prefix_(std::move(prefix)),
      host_(host),
      hosts_(hosts),
      token_(std::move(token)),
      local_readers_(local_readers) {
  if (hosts < 1 || host < 0 || host >= hosts) {
    throw std::invalid_argument(fmt::format(
        "host exchange: host {} is outside a job of {} hosts; hosts run from 0 to hosts-1", host, hosts));
  }
}

HostAgentExchange::~HostAgentExchange() = default;

void HostAgentExchange::rendezvous(Millis timeout) {
  const auto deadline = Deadline::after(timeout);
  const std::string mine = fmt::format("{} {} {}", own_store_.port(), local_readers_, advertised_host_);
  job_store_.set(address_key(prefix_, host_), Bytes(mine.begin(), mine.end()));
  const int parent = binomial_parent(host_);
  if (parent < 0) return;
  const std::string key = address_key(prefix_, parent);
  Bytes where;
  try {
    where = job_store_.get(key, Millis(deadline.remaining_ms()));
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout) throw;
    throw StoreError(StoreError::Code::Timeout,
                     fmt::format("host {}'s agent waited {} ms for the agent of host {} (its parent in "
                                 "the tree) to publish its store; is that host's agent alive?",
                                 host_, timeout.count(), parent),
                     {key});
  }
  const auto address = parse_address(where);
  if (!address) {
    throw StoreError(StoreError::Code::Protocol,
                     fmt::format("host {}'s agent published '{}' as its store's address; expected "
                                 "'<port> <local readers> <host>'", parent, std::string(where.begin(), where.end())));
  }
  parent_local_readers_ = address->local_readers;
  parent_store_ = StoreClient::connect(address->host, address->port,
                                       Millis(std::max<int64_t>(deadline.remaining_ms(), 1)), token_);
}

std::string HostAgentExchange::table_prefix(const std::string& prefix, uint64_t seq) {
  return fmt::format("{}/hag/{}/", prefix, seq);
}

std::string HostAgentExchange::address_key(const std::string& prefix, int host) {
  return fmt::format("{}/agents/{}", prefix, host);
}

std::optional<HostAgentExchange::StoreAddress> HostAgentExchange::parse_address(const Bytes& published) {
  // "<port> <local readers> <host>": numbers in range (a host holds at most a million ranks), a
  // host name after them.
  constexpr int kMaxLocalReaders = 1 << 20;
  const std::string text(published.begin(), published.end());
  const char* p = text.data();
  const char* end = p + text.size();
  unsigned port = 0;
  int readers = -1;
  auto r1 = std::from_chars(p, end, port);
  if (r1.ec != std::errc() || r1.ptr == end || *r1.ptr != ' ') return std::nullopt;
  auto r2 = std::from_chars(r1.ptr + 1, end, readers);
  if (r2.ec != std::errc() || r2.ptr == end || *r2.ptr != ' ' || r2.ptr + 1 == end) return std::nullopt;
  if (port == 0 || port > 65535 || readers < 0 || readers > kMaxLocalReaders) return std::nullopt;
  return StoreAddress{std::string(r2.ptr + 1, end), static_cast<uint16_t>(port), readers};
}

int HostAgentExchange::readers(int host, int hosts, int local_readers) {
  return static_cast<int>(binomial_children(host, hosts).size()) + local_readers;
}

std::shared_ptr<const Bytes> HostAgentExchange::allgather(const Bytes& host_blocks, Millis timeout,
                                                          const Assemble& assemble) {
  if (host_ != 0 && !parent_store_) {
    throw std::logic_error("host exchange: allgather before rendezvous");
  }
  const std::string base = table_prefix(prefix_, seq_++);
  std::shared_ptr<const Bytes> table;
  if (hosts_ == 1) {
    table = std::make_shared<const Bytes>(assemble ? assemble(host_blocks) : host_blocks);
  } else {
    job_store_.set(fmt::format("{}blk/{}", base, host_), host_blocks);
    if (host_ == 0) {
      Bytes gathered = gather_at_root(base, timeout);
      table = std::make_shared<const Bytes>(assemble ? assemble(std::move(gathered)) : std::move(gathered));
    } else {
      table = std::make_shared<const Bytes>(fetch_from_parent(base, timeout));
    }
  }
  if (readers(host_, hosts_, local_readers_) > 0) own_store_.set_shared(base + "table", table);
  return table;
}

Bytes HostAgentExchange::gather_at_root(const std::string& base, Millis timeout) {
  std::vector<std::string> keys(static_cast<size_t>(hosts_));
  for (int h = 0; h < hosts_; ++h) keys[static_cast<size_t>(h)] = fmt::format("{}blk/{}", base, h);
  Bytes table;
  try {
    job_store_.multi_get_each(keys, timeout, [&](size_t i, const uint8_t* data, size_t size) {
      if (i == 0) table.reserve(size * keys.size());  // exact when every host has as many ranks
      table.insert(table.end(), data, data + size);
    });
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout || e.missing_keys().empty()) throw;
    throw StoreError(StoreError::Code::Timeout,
                     fmt::format("host allgather under '{}' timed out after {} ms: {} not sent "
                                 "their ranks' blocks; is each of their agents alive?",
                                 base, timeout.count(), describe_missing(e.missing_keys(), "host")),
                     e.missing_keys());
  }
  job_store_.delete_prefix(base);  // host 0 is the only reader of the blocks
  return table;
}

Bytes HostAgentExchange::fetch_from_parent(const std::string& base, Millis timeout) {
  const int parent = binomial_parent(host_);
  Bytes table;
  try {
    table = parent_store_->get(base + "table", timeout);
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout) throw;
    throw StoreError(StoreError::Code::Timeout,
                     fmt::format("host {}'s agent waited {} ms for the gathered table from host {} "
                                 "(its parent in the tree); is that host's agent alive, and did "
                                 "every host join this allgather?",
                                 host_, timeout.count(), parent),
                     {base + "table"});
  }
  if (parent_store_->add(base + "done", 1) == readers(parent, hosts_, parent_local_readers_))
    parent_store_->delete_prefix(base);
  return table;
}

Bytes HostAgentExchange::reduce(Bytes partial, StoreClient& own_client, const Absorb& absorb, size_t per_get,
                                Millis timeout) {
  if (host_ != 0 && !parent_store_) throw std::logic_error("host exchange: reduce before rendezvous");
  const uint64_t seq = reduce_seq_++;
  const std::string base = fmt::format("{}/hrd/{}/", prefix_, seq);
  const std::vector<int> children = binomial_children(host_, hosts_);
  if (!children.empty()) {
    std::vector<std::string> keys;
    for (int c : children) keys.push_back(base + std::to_string(c));
    try {
      partial::read_each(own_client, keys, per_get, timeout, [&](size_t i, const uint8_t* data, size_t size) {
        absorb(partial, data, size, children[i]);
      });
    } catch (const StoreError& e) {
      if (e.code() != StoreError::Code::Timeout || e.missing_keys().empty()) throw;
      throw StoreError(StoreError::Code::Timeout,
                       fmt::format("host reduction #{} under '{}' timed out after {} ms on host {}: {} not sent "
                                   "its partial result (it sends it once the hosts below it in the tree have "
                                   "sent theirs); is each of their agents alive?",
                                   seq, prefix_, timeout.count(), host_, describe_missing(e.missing_keys(), "host")),
                       e.missing_keys());
    }
    own_client.delete_prefix(base);  // this host is their only reader
  }
  if (host_ == 0) return partial;
  parent_store_->set(fmt::format("{}/hrd/{}/{}", prefix_, seq, host_), partial);
  return {};
}

}  // namespace commbench
