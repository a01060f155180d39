#include "address_exchange.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>

#include "errors.h"

namespace commbench::gloo_backend {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void allgather(const cb_host_services& host, const void* send, size_t bytes, void* recv, const Deadline& deadline,
               const char* what) {
  const cb_status status = host.bootstrap_allgather(host.ctx, send, bytes, recv, deadline.remaining_ms());
  if (status == CB_ERR_TIMEOUT)
    fail(CB_ERR_TIMEOUT, std::string("rendezvous timed out (comm_create timeout ") +
                             std::to_string(deadline.timeout_ms()) + " ms) in the bootstrap allgather of " + what +
                             ": some rank did not reach comm_create; the bootstrap's message in this rank's log "
                             "names the ranks it waited for");
  if (status != CB_OK)
    fail(status, std::string("the bootstrap allgather of ") + what + " failed (status " +
                     std::to_string(static_cast<int>(status)) +
                     "): the bootstrap's message in this rank's log says why");
}

}  // namespace

Deadline::Deadline(int32_t timeout_ms)
    : timeout_ms_(timeout_ms), end_ns_(now_ns() + static_cast<int64_t>(std::max(timeout_ms, 0)) * 1'000'000) {}

int32_t Deadline::remaining_ms() const {
  if (timeout_ms_ < 0) return -1;
  const int64_t left = (end_ns_ - now_ns()) / 1'000'000;
  return static_cast<int32_t>(std::clamp<int64_t>(left, 0, std::numeric_limits<int32_t>::max()));
}

std::span<const char> AddressLists::list(int rank) const {
  const auto r = static_cast<size_t>(rank);
  return {table.data() + r * stride, static_cast<size_t>(lengths.at(r))};
}

AddressLists exchange_address_lists(const cb_host_services& host, std::vector<char> mine, const Deadline& deadline) {
  const auto world = static_cast<size_t>(host.world_size);
  AddressLists out;
  const uint64_t length = mine.size();
  out.lengths.resize(world);
  allgather(host, &length, sizeof(length), out.lengths.data(), deadline, "the lengths of the ranks' Gloo address lists");
  const uint64_t longest = *std::max_element(out.lengths.begin(), out.lengths.end());
  // A packed address takes at most about 210 bytes (address_table.cpp): a longer list is another
  // build's, not memory to ask every rank for.
  const uint64_t bound = 4096 + static_cast<uint64_t>(world) * 256;
  if (longest > bound) {
    const auto owner = std::max_element(out.lengths.begin(), out.lengths.end()) - out.lengths.begin();
    fail(CB_ERR_INTERNAL, "rank " + std::to_string(owner) + " published a Gloo address list of " +
                              std::to_string(longest) + " bytes, more than " + std::to_string(bound) + " for " +
                              std::to_string(world) + " ranks: its plugin is a different build than this rank's; "
                              "use one build on every rank");
  }
  out.stride = static_cast<size_t>(longest);
  mine.resize(out.stride);  // zero padding: every rank contributes the same size
  out.table.resize(out.stride * world);
  allgather(host, mine.data(), mine.size(), out.table.data(), deadline, "the ranks' Gloo addresses");
  return out;
}

}  // namespace commbench::gloo_backend
