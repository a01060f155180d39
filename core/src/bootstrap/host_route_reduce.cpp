// A reduction through the hosts' leaders and up their tree (bootstrap/host_route.h): rank 0
// receives its own host's ranks' partials and ceil(log2 H) children's, one slice each, where a
// gather hands it N blocks.
#include <fmt/format.h>

#include "bootstrap/deadline.h"
#include "bootstrap/host_route.h"
#include "bootstrap/host_tree.h"

namespace commbench {

Bytes HostRoute::reduce(Bytes partial, ReduceOp op, size_t reply_budget, Millis timeout, std::vector<int>* missing) {
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = reduce_seq_++;  // taken first: a failed connect still keeps this rank in step
  if (!own_client_ && !leader_store_) connect(timeout, missing);
  const std::string local = fmt::format("{}/rl/{}/", prefix_, seq);
  if (!leader()) {
    try {
      leader_store_->set(local + std::to_string(rank_), partial);
    } catch (const StoreError& e) {
      if (e.code() == StoreError::Code::Connection) leader_gone(e, fmt::format("reduction #{}", seq));
      throw;
    }
    return {};
  }
  const auto fold = [&](Bytes& into, const uint8_t* data, size_t size, const std::string& who) {
    const std::string problem = partial::absorb(into, data, size, op);
    if (!problem.empty())
      throw StoreError(StoreError::Code::Protocol,
                       fmt::format("host reduction #{} under '{}': {} sent {}", seq, prefix_, who, problem));
  };
  const size_t per_get = partial::per_reply(reply_budget, partial.size());
  read_host_ranks(
      local, Millis(deadline.remaining_ms()), missing, "reduction",
      [&](int r, const uint8_t* data, size_t size) { fold(partial, data, size, fmt::format("rank {}", r)); }, per_get);
  return exchange_->reduce(
      std::move(partial), *own_client_,
      [&](Bytes& into, const uint8_t* data, size_t size, int child) {
        fold(into, data, size, fmt::format("host {}", child));
      },
      per_get, Millis(deadline.remaining_ms()));
}

}  // namespace commbench
