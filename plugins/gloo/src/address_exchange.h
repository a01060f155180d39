// Every rank's packed address list (address_table.h), exchanged through the host's bootstrap:
// two allgathers, the lists' lengths and then the lists padded to the longest, since the host's
// allgather takes one size from every rank and lists differ by a byte or more.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "commbench/backend.h"

namespace commbench::gloo_backend {

// comm_create's timeout, counted from construction; negative: no limit.
class Deadline {
 public:
  explicit Deadline(int32_t timeout_ms);
  int32_t remaining_ms() const;  // what is left, for the next host call; -1 without a limit
  int32_t timeout_ms() const { return timeout_ms_; }

 private:
  int32_t timeout_ms_;
  int64_t end_ns_;
};

struct AddressLists {
  std::vector<char> table;        // world lists of `stride` bytes, in rank order
  std::vector<uint64_t> lengths;  // each list's own length within its stride
  size_t stride = 0;
  std::span<const char> list(int rank) const;
};

// Collective over the host's ranks. Throws PluginError: CB_ERR_TIMEOUT when a rank does not
// arrive in time, the host's status when the bootstrap fails, CB_ERR_INTERNAL when a rank's
// length is beyond any list of `world` addresses.
AddressLists exchange_address_lists(const cb_host_services& host, std::vector<char> mine, const Deadline& deadline);

}  // namespace commbench::gloo_backend
