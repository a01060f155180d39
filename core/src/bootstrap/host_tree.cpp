// Key layout, under the exchange's prefix:
//   job store:  "<prefix>/agents/<h>"           where host h's store listens ("<port> <host>")
//               "<prefix>/hag/<seq>/blk/<h>"    host h's blocks; host 0 reads and deletes them
//   host h's store: "<prefix>/hag/<seq>/table"  the gathered table, for h's children
//                   "<prefix>/hag/<seq>/done"   children that have read it; the last deletes both
// Agent addresses stay for the run; the agent deletes the run's whole prefix when it ends.
#include "bootstrap/host_tree.h"

#include <stdexcept>

#include <fmt/format.h>

#include "bootstrap/deadline.h"
#include "bootstrap/missing_keys.h"

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
                                     int hosts, std::string token)
    : job_store_(job_store),
      own_store_(own_store),
      advertised_host_(std::move(advertised_host)),
      prefix_(std::move(prefix)),
      host_(host),
      hosts_(hosts),
      token_(std::move(token)) {
  if (hosts < 1 || host < 0 || host >= hosts) {
    throw std::invalid_argument(fmt::format(
        "host exchange: host {} is outside a job of {} hosts; hosts run from 0 to hosts-1", host, hosts));
  }
}

HostAgentExchange::~HostAgentExchange() = default;

void HostAgentExchange::rendezvous(Millis timeout) {
  const auto deadline = Deadline::after(timeout);
  const std::string mine = fmt::format("{} {}", own_store_.port(), advertised_host_);
  job_store_.set(fmt::format("{}/agents/{}", prefix_, host_), Bytes(mine.begin(), mine.end()));
  const int parent = binomial_parent(host_);
  if (parent < 0) return;
  const std::string key = fmt::format("{}/agents/{}", prefix_, parent);
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
  const std::string text(where.begin(), where.end());
  const auto space = text.find(' ');
  const int port = space == std::string::npos ? 0 : std::atoi(text.substr(0, space).c_str());
  if (port <= 0 || port > 65535) {
    throw StoreError(StoreError::Code::Protocol,
                     fmt::format("host {}'s agent published '{}' as its store's address; expected "
                                 "'<port> <host>'", parent, text));
  }
  parent_store_ = StoreClient::connect(text.substr(space + 1), static_cast<uint16_t>(port),
                                       Millis(std::max<int64_t>(deadline.remaining_ms(), 1)), token_);
}

std::shared_ptr<const Bytes> HostAgentExchange::allgather(const Bytes& host_blocks, Millis timeout) {
  if (hosts_ == 1) return std::make_shared<const Bytes>(host_blocks);
  if (host_ != 0 && !parent_store_) {
    throw std::logic_error("host exchange: allgather before rendezvous");
  }
  const std::string base = fmt::format("{}/hag/{}/", prefix_, seq_++);
  job_store_.set(fmt::format("{}blk/{}", base, host_), host_blocks);
  auto table = std::make_shared<const Bytes>(host_ == 0 ? gather_at_root(base, timeout)
                                                       : fetch_from_parent(base, timeout));
  if (!binomial_children(host_, hosts_).empty()) own_store_.set_shared(base + "table", table);
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
  const auto readers = static_cast<int64_t>(binomial_children(parent, hosts_).size());
  if (parent_store_->add(base + "done", 1) == readers) parent_store_->delete_prefix(base);
  return table;
}

}  // namespace commbench
