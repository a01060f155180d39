// Bootstrap collectives over the store. Every collective takes the next sequence number and
// works under "<prefix>/<kind>/<seq>/", so all ranks must call the same collectives in the same
// order. Cleanup ("last reader deletes"): each rank that read the collective's keys ADDs 1 to
// "<base>done"; the rank whose ADD returns the number of readers knows nobody will read them
// again and deletes the whole "<base>" prefix, counter included. A long run therefore holds
// only the keys of collectives still in flight. A collective that fails (timeout) leaves its
// keys behind; the agent deletes the run's whole prefix when the run ends.
#include "bootstrap/collectives.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "bootstrap/deadline.h"
#include "bootstrap/missing_keys.h"
#include "bootstrap/wire_protocol.h"

namespace commbench {
namespace {

// Time left for the next step of a multi-step collective, in the store's convention.
Millis remaining(const Deadline& deadline) {
  return Millis(deadline.remaining_ms());  // -1 = no limit
}

Bytes to_bytes(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  return Bytes(p, p + bytes);
}

// Where read_blocks puts each rank's block for a gather or an allgather: its place in the table.
std::function<void(int, const uint8_t*, size_t)> into_table(void* recv, size_t bytes) {
  return [out = static_cast<uint8_t*>(recv), bytes](int rank, const uint8_t* data, size_t) {
    if (bytes > 0) std::memcpy(out + static_cast<size_t>(rank) * bytes, data, bytes);
  };
}

// Shared tail of every collective: count this rank as a reader of `base`, and delete it when
// this was the last reader.
void finish_reading(StoreClient& store, const std::string& base, int readers) {
  if (store.add(base + "done", 1) == readers) store.delete_prefix(base);
}

}  // namespace

Bootstrap::Bootstrap(StoreClient& store, std::string prefix, int rank, int world_size)
    : store_(store), prefix_(std::move(prefix)), rank_(rank), world_size_(world_size) {
  if (world_size < 1 || rank < 0 || rank >= world_size) {
    throw std::invalid_argument(fmt::format(
        "bootstrap: rank {} is outside a world of {} ranks; ranks run from 0 to world_size-1", rank,
        world_size));
  }
}

void Bootstrap::route_through_hosts(HostLayout layout, std::string token) {
  if (layout.hosts > 1)
    route_ = std::make_unique<HostRoute>(store_, prefix_ + "/hosts", rank_, world_size_, std::move(layout),
                                         std::move(token));
}

void Bootstrap::close(Millis timeout) {
  if (route_) barrier(timeout);
}

std::string Bootstrap::next_key(const char* what) {
  if (missing_out_) missing_out_->clear();  // a new collective: the last one's absentees no longer matter
  return fmt::format("{}/{}/{}/", prefix_, what, seq_++);
}

namespace {

// A sliced collective's first piece starts with the caller's total size, so that ranks that
// passed different sizes fail with both named instead of cutting different slices and drifting
// out of step. A rank that did not slice (a smaller size) fails the piece's size check: the
// first piece is always larger than anything the unsliced path sends.
constexpr size_t kTotalBytes = sizeof(uint64_t);

// A slice's failure, said in terms of the whole collective.
[[noreturn]] void rethrow_for_slice(const StoreError& e, const char* what, size_t slice, size_t slices,
                                    size_t bytes, Millis timeout) {
  throw StoreError(e.code(),
                   fmt::format("{} (slice {} of {} of a {}-byte {}, {})", e.what(), slice + 1, slices,
                               bytes, what,
                               timeout.count() < 0 ? std::string("no time limit")
                                                   : fmt::format("{} ms for all of them", timeout.count())),
                   e.missing_keys());
}

}  // namespace

void Bootstrap::allgather(const void* send, size_t bytes, void* recv, Millis timeout) {
  in_slices("allgather", send, bytes, recv, timeout,
            [&](const void* s, size_t n, void* r, Millis t) { allgather_one(s, n, r, t); });
}

void Bootstrap::gather(const void* send, size_t bytes, void* recv, int root, Millis timeout) {
  if (root < 0 || root >= world_size_) {
    throw std::invalid_argument(fmt::format(
        "bootstrap gather: root {} is outside a world of {} ranks", root, world_size_));
  }
  in_slices("gather", send, bytes, rank_ == root ? recv : nullptr, timeout, [&](const void* s, size_t n, void* r, Millis t) {
    gather_one(s, n, r, root, t);
  }, /*paced=*/true);
}

void Bootstrap::in_slices(const char* what, const void* send, size_t bytes, void* recv, Millis timeout,
                          const std::function<void(const void*, size_t, void*, Millis)>& one, bool paced) {
  const size_t world = static_cast<size_t>(world_size_);
  if (world == 1 || bytes <= kSliceBudget / world) return one(send, bytes, recv, timeout);
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = seq_;
  const size_t slice = std::max<size_t>(1, kSliceBudget / world);  // < bytes
  const size_t slices = (bytes + slice - 1) / slice;
  const auto* in = static_cast<const uint8_t*>(send);
  auto* out = static_cast<uint8_t*>(recv);
  std::vector<uint8_t> piece(kTotalBytes + slice), table(out ? world * (kTotalBytes + slice) : 0);
  for (size_t k = 0, at = 0; k < slices; ++k, at += slice) {
    const size_t n = std::min(slice, bytes - at);
    const size_t head = k == 0 ? kTotalBytes : 0;
    const uint64_t total = bytes;
    std::memcpy(piece.data(), &total, head);
    std::memcpy(piece.data() + head, in + at, n);
    try {
      one(piece.data(), head + n, out ? table.data() : nullptr, remaining(deadline));
    } catch (const StoreError& e) {
      rethrow_for_slice(e, what, k, slices, bytes, timeout);
    }
    for (size_t r = 0; out && r < world; ++r) {  // not on a gather's other ranks
      const uint8_t* block = table.data() + r * (head + n);
      if (head > 0) {
        uint64_t theirs = 0;
        std::memcpy(&theirs, block, kTotalBytes);
        if (theirs != total)
          throw StoreError(StoreError::Code::Protocol,
                           fmt::format("{} #{} under '{}': rank {} contributed {} bytes, rank {} "
                                       "{}; every rank must pass the same size",
                                       what, seq, prefix_, r, theirs, rank_, bytes));
      }
      std::memcpy(out + r * bytes + at, block + head, n);
    }
    // After the root's check: a root that refused the sizes leaves the others waiting here, and
    // they time out naming the slice.
    if (!paced || k + 1 == slices) continue;
    try {
      barrier(remaining(deadline));
    } catch (const StoreError& e) {
      rethrow_for_slice(e, what, k, slices, bytes, timeout);
    }
  }
}

void Bootstrap::allgather_one(const void* send, size_t bytes, void* recv, Millis timeout) {
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = seq_;  // for messages; next_key() advances it
  const std::string base = next_key("ag");
  if (world_size_ == 1) {
    if (bytes > 0) std::memmove(recv, send, bytes);
    return;
  }
  if (route_) {
    route_->allgather(send, bytes, recv, remaining(deadline), missing_out_);
    return;
  }
  store_.set(base + std::to_string(rank_), to_bytes(send, bytes));
  read_blocks("allgather", seq, base, -1, bytes, into_table(recv, bytes), timeout, deadline);
  finish_reading(store_, base, world_size_);
}

void Bootstrap::gather_one(const void* send, size_t bytes, void* recv, int root, Millis timeout) {
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = seq_;  // for messages; next_key() advances it
  const std::string base = next_key("ga");
  if (world_size_ == 1) {
    if (bytes > 0) std::memmove(recv, send, bytes);
    return;
  }
  if (route_) {
    route_->gather(send, bytes, recv, root, remaining(deadline), missing_out_);
    return;
  }
  // The other ranks write and go on; the root, the only reader, deletes: N blocks through the
  // store once, where an allgather sends each of them to every rank.
  if (rank_ != root) return store_.set(base + std::to_string(rank_), to_bytes(send, bytes));
  read_blocks("gather", seq, base, root, bytes, into_table(recv, bytes), timeout, deadline);
  if (bytes > 0) std::memcpy(static_cast<uint8_t*>(recv) + static_cast<size_t>(root) * bytes, send, bytes);
  store_.delete_prefix(base);
}

void Bootstrap::reduce_to_rank0(const double* send, size_t count, double* recv, ReduceOp op, Millis timeout) {
  // One store holds every rank's slice at once; a leader's store or a tree's, one per child.
  const size_t budget = route_ ? kSliceBudget : kSliceBudget / static_cast<size_t>(world_size_);
  const size_t per_slice = std::max<size_t>(1, budget / sizeof(double));
  if (count <= per_slice) return reduce_one(send, count, count, recv, op, timeout);
  const auto deadline = Deadline::after(timeout);
  const size_t slices = (count + per_slice - 1) / per_slice;
  for (size_t k = 0, at = 0; k < slices; ++k, at += per_slice) {
    const size_t n = std::min(per_slice, count - at);
    try {
      reduce_one(send + at, n, count, rank_ == 0 ? recv + at : nullptr, op, remaining(deadline));
      // Paced as a gather is: the others would otherwise store every slice at once.
      if (k + 1 < slices) barrier(remaining(deadline));
    } catch (const StoreError& e) {
      rethrow_for_slice(e, "reduction", k, slices, count * sizeof(double), timeout);
    }
  }
}

void Bootstrap::reduce_one(const double* send, size_t count, uint64_t total, double* recv, ReduceOp op,
                           Millis timeout) {
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = seq_;  // for messages; next_key() advances it
  const std::string base = next_key("rd");
  Bytes mine = partial::make(1, total, send, count);
  if (world_size_ == 1) {
    if (count > 0) std::memmove(recv, send, count * sizeof(double));
    return;
  }
  if (route_) {
    mine = route_->reduce(std::move(mine), op, kSliceBudget, remaining(deadline), missing_out_);
    if (rank_ != 0) return;
    if (mine.size() < partial::kHeader)  // rank 0 leads host 0: hosts are numbered by their lowest rank
      throw std::logic_error("bootstrap reduction: rank 0 does not lead host 0 of its execution");
  } else {
    if (rank_ != 0) return store_.set(base + std::to_string(rank_), mine);
    read_blocks("reduction", seq, base, 0, kAnySize, [&](int r, const uint8_t* data, size_t size) {
      const std::string problem = partial::absorb(mine, data, size, op);
      if (!problem.empty())
        throw StoreError(StoreError::Code::Protocol,
                         fmt::format("reduction #{} under '{}': rank {} sent {}", seq, prefix_, r, problem));
    }, timeout, deadline);
    store_.delete_prefix(base);  // rank 0 is the only reader
  }
  if (partial::ranks(mine) != static_cast<uint32_t>(world_size_) || partial::count(mine) != count)
    throw StoreError(StoreError::Code::Protocol,
                     fmt::format("reduction #{} under '{}': the result covers {} of {} ranks and holds {} values "
                                 "of {}; do all ranks run the same commbench?",
                                 seq, prefix_, partial::ranks(mine), world_size_, partial::count(mine), count));
  partial::values(mine, recv);
}

void Bootstrap::read_blocks(const char* what, uint64_t seq, const std::string& base, int skip, size_t bytes,
                            const BlockSink& sink, Millis timeout, const Deadline& deadline) {
  std::vector<std::string> keys;
  std::vector<size_t> ranks;
  for (int r = 0; r < world_size_; ++r)
    if (r != skip) {
      keys.push_back(base + std::to_string(r));
      ranks.push_back(static_cast<size_t>(r));
    }
  auto check_block = [&](size_t i, const uint8_t* data, size_t size) {
    if (bytes != kAnySize && size != bytes) {
      throw StoreError(
          StoreError::Code::Protocol,
          fmt::format("{} #{} under '{}': rank {} contributed {} bytes, rank {} "
                      "{}; every rank must pass the same size",
                      what, seq, prefix_, ranks[i], size, rank_, bytes));
    }
    sink(static_cast<int>(ranks[i]), data, size);
  };
  try {
    store_.multi_get_each(keys, remaining(deadline), check_block);
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout || e.missing_keys().empty()) throw;
    if (missing_out_)
      for (const std::string& key : e.missing_keys()) {
        const auto slash = key.rfind('/');
        const std::string tail = key.substr(slash == std::string::npos ? 0 : slash + 1);
        if (!tail.empty() && tail.find_first_not_of("0123456789") == std::string::npos)
          missing_out_->push_back(std::stoi(tail));
      }
    throw StoreError(
        StoreError::Code::Timeout,
        fmt::format("{} #{} under '{}' timed out after {} ms: {} not arrived; {} "
                    "(It may have crashed or hung, or called a different sequence of bootstrap "
                    "collectives.)",
                    what, seq, prefix_, timeout.count(), describe_missing(e.missing_keys(), "rank"),
                    alive_question(e.missing_keys().size())),
        e.missing_keys());
  }
}

namespace {
// What rank 0 broadcasts when its gather timed out: kGaveUp, or kGaveUpOn - r when it knows that
// rank r never arrived. The others then fail naming r (as the allgather this replaces did)
// instead of blaming rank 0 for a broadcast that never came.
constexpr int32_t kGaveUp = -2;
constexpr int32_t kGaveUpOn = -3;
constexpr Millis kVerdictGrace{1000};
}  // namespace

int Bootstrap::first_rank_that(bool mine, Millis timeout) {
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = seq_;
  const uint8_t flag = mine ? 1 : 0;
  std::vector<uint8_t> flags(rank_ == 0 ? static_cast<size_t>(world_size_) : 0);
  // The others wait a little past the deadline, which rank 0's gather shares: its verdict, sent
  // when that gather timed out, then still arrives (the agent's own backstop is 1.5 s past the
  // execution's timeout).
  const auto verdict_wait = [&] {
    return rank_ == 0 || deadline.unlimited() ? remaining(deadline)
                                              : Millis(deadline.extended(kVerdictGrace).remaining_ms());
  };
  try {
    gather(&flag, 1, flags.data(), 0, remaining(deadline));
  } catch (const StoreError& e) {
    // Rank 0, and a host's leader whose host's ranks did not all come (routed), still take part
    // in the broadcast before failing: rank 0 sends its verdict, a leader hands it to its host.
    if (e.code() != StoreError::Code::Timeout) throw;
    const std::vector<int> missing = missing_out_ ? *missing_out_ : std::vector<int>{};
    int32_t verdict = missing.empty() ? kGaveUp : kGaveUpOn - missing.front();
    try {
      broadcast(&verdict, sizeof(verdict), 0, rank_ == 0 ? Millis(1000) : verdict_wait());  // rank 0 only stores it
    } catch (const StoreError&) {
    }
    if (missing_out_) *missing_out_ = missing;  // the broadcast cleared the list
    throw;
  }
  int32_t first = -1;
  for (size_t r = 0; r < flags.size() && first < 0; ++r)
    if (flags[r]) first = static_cast<int32_t>(r);
  broadcast(&first, sizeof(first), 0, verdict_wait());
  if (first >= -1) return first;
  // kGaveUp: rank 0 knew no rank to name (routed, it knows only hosts; the leader of the rank
  // that never came names it). A rank that came too late does not name itself.
  const int absent = kGaveUpOn - first;
  const bool named = absent >= 0 && absent != rank_;
  if (named && missing_out_) missing_out_->push_back(absent);
  throw StoreError(StoreError::Code::Timeout,
                   fmt::format("gather #{} under '{}' timed out at rank 0{}; is it alive? (It may have crashed or "
                               "hung, or called a different sequence of bootstrap collectives.)",
                               seq, prefix_,
                               named               ? fmt::format(": rank {} has not arrived", absent)
                               : absent == rank_   ? ", which gave up waiting before this rank arrived"
                                                   : ""));
}

void Bootstrap::broadcast(void* buffer, size_t bytes, int root, Millis timeout) {
  if (root < 0 || root >= world_size_) {
    throw std::invalid_argument(fmt::format(
        "bootstrap broadcast: root {} is outside a world of {} ranks", root, world_size_));
  }
  if (world_size_ == 1 || bytes <= kSliceBudget) return broadcast_one(buffer, bytes, root, timeout);
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = seq_;
  const size_t slices = (bytes + kSliceBudget - 1) / kSliceBudget;
  auto* p = static_cast<uint8_t*>(buffer);
  std::vector<uint8_t> first(kTotalBytes + kSliceBudget);
  const uint64_t total = bytes;
  std::memcpy(first.data(), &total, kTotalBytes);
  if (rank_ == root) std::memcpy(first.data() + kTotalBytes, p, kSliceBudget);
  for (size_t k = 0, at = 0; k < slices; ++k, at += kSliceBudget) {
    const size_t n = std::min(kSliceBudget, bytes - at);
    try {
      if (k == 0) broadcast_one(first.data(), first.size(), root, remaining(deadline));
      else broadcast_one(p + at, n, root, remaining(deadline));
    } catch (const StoreError& e) {
      rethrow_for_slice(e, "broadcast", k, slices, bytes, timeout);
    }
    if (k > 0) continue;
    uint64_t theirs = 0;
    std::memcpy(&theirs, first.data(), kTotalBytes);
    if (theirs != total)
      throw StoreError(StoreError::Code::Protocol,
                       fmt::format("broadcast #{} under '{}': root rank {} sent {} bytes, rank {} "
                                   "expects {}; every rank must pass the same size",
                                   seq, prefix_, root, theirs, rank_, bytes));
    if (rank_ != root) std::memcpy(p, first.data() + kTotalBytes, kSliceBudget);
  }
}

void Bootstrap::broadcast_one(void* buffer, size_t bytes, int root, Millis timeout) {
  const uint64_t seq = seq_;  // for messages; next_key() advances it
  const std::string base = next_key("bc");
  if (world_size_ == 1) return;
  if (route_) {
    route_->broadcast(buffer, bytes, root, timeout, missing_out_);
    return;
  }
  if (rank_ == root) {
    // The root does not read, so it takes no part in the cleanup count.
    store_.set(base + "value", to_bytes(buffer, bytes));
    return;
  }
  Bytes value;
  try {
    value = store_.get(base + "value", timeout);
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout) throw;
    if (missing_out_) missing_out_->push_back(root);
    throw StoreError(StoreError::Code::Timeout,
                     fmt::format("broadcast #{} under '{}' timed out after {} ms: root rank {} has "
                                 "not arrived; is it alive? (It may have crashed or hung, or "
                                 "called a different sequence of bootstrap collectives.)",
                                 seq, prefix_, timeout.count(), root),
                     e.missing_keys());
  }
  if (value.size() != bytes) {
    throw StoreError(StoreError::Code::Protocol,
                     fmt::format("broadcast #{} under '{}': root rank {} sent {} bytes, rank {} "
                                 "expects {}; every rank must pass the same size",
                                 seq, prefix_, root, value.size(), rank_, bytes));
  }
  if (bytes > 0) std::memcpy(buffer, value.data(), bytes);
  finish_reading(store_, base, world_size_ - 1);
}

void Bootstrap::barrier(Millis timeout) {
  // A counter and one "open" key: O(world_size) work for the store, where an allgather of
  // nothing would cost O(world_size^2).
  const auto deadline = Deadline::after(timeout);
  const uint64_t seq = seq_;  // for messages; next_key() advances it
  const std::string base = next_key("bar");
  if (world_size_ == 1) return;
  if (route_) {
    route_->barrier(remaining(deadline));
    return;
  }
  if (store_.add(base + "arrived", 1) == world_size_) store_.set(base + "open", {});
  try {
    store_.get(base + "open", remaining(deadline));
  } catch (const StoreError& e) {
    if (e.code() != StoreError::Code::Timeout) throw;
    int64_t arrived = -1;
    wire::decode_counter(store_.get(base + "arrived", Millis(0)), arrived);
    throw StoreError(
        StoreError::Code::Timeout,
        fmt::format("barrier #{} under '{}' timed out after {} ms: only {} of {} ranks "
                    "arrived; the others are slow, hung or dead, or called a "
                    "different sequence of bootstrap collectives",
                    seq, prefix_, timeout.count(), arrived, world_size_),
        e.missing_keys());
  }
  finish_reading(store_, base, world_size_);
}

void Bootstrap::kv_set(const std::string& key, const Bytes& value) {
  store_.set(prefix_ + "/kv/" + key, value);
}

Bytes Bootstrap::kv_get(const std::string& key, Millis timeout) {
  return store_.get(prefix_ + "/kv/" + key, timeout);
}

}  // namespace commbench
