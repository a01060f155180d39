#include "legacy_algorithms.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring_chunked.h>

#include "checked_op.h"
#include "communicator.h"
#include "errors.h"
#include "reduce_scatter_halving_doubling.h"
#include "reduction.h"

namespace commbench::gloo_backend {
namespace {

// Whether every rank passed the same `generation` (a 2-element max-allreduce of g and -g).
bool same_on_every_rank(cb_comm& comm, int64_t generation) {
  int64_t extremes[2] = {generation, -generation};
  gloo::AllreduceOptions opts(comm.context);
  opts.setOutput(extremes, 2);
  opts.setReduceFunction(reduce_function(CB_DTYPE_INT64, CB_REDOP_MAX));
  opts.setTag(comm.take_tag());
  gloo::allreduce(opts);
  return extremes[0] == -extremes[1];  // max == min
}

std::unique_ptr<gloo::Algorithm> make_allreduce(cb_comm& comm, const CheckedOp& op,
                                                AllreduceAlgorithm algorithm) {
  const int count = static_cast<int>(op.count);  // check_op bounded the byte size by INT_MAX
  return with_storage_type(op.element_size, [&](auto storage) -> std::unique_ptr<gloo::Algorithm> {
    using T = decltype(storage);
    const std::vector<T*> buffers{static_cast<T*>(op.recvbuf)};
    const auto* fn = legacy_reduction(T{}, op.dtype, op.redop);
    if (algorithm == AllreduceAlgorithm::kRingChunked)
      return std::make_unique<gloo::AllreduceRingChunked<T>>(comm.context, buffers, count, fn);
    return std::make_unique<gloo::AllreduceHalvingDoubling<T>>(comm.context, buffers, count, fn);
  });
}

// Moves the entry matching `key` to the front; returns whether there was one.
template <class Entries, class Key>
bool bring_to_front(Entries& entries, const Key& key) {
  const auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) { return e.key == key; });
  if (it == entries.end()) return false;
  entries.splice(entries.begin(), entries, it);
  return true;
}

}  // namespace

void LegacyAllreduceCache::run(cb_comm& comm, const CheckedOp& op, AllreduceAlgorithm algorithm) {
  const Key key{op.recvbuf, op.count, op.dtype, op.redop, algorithm};
  const bool hit = bring_to_front(entries_, key);
  constexpr int64_t kNone = -1;  // generations start at 0
  const int64_t mine = hit ? entries_.front().generation : kNone;
  const bool everyone_holds_it = same_on_every_rank(comm, mine) && hit;  // collective: always runs
  if (!everyone_holds_it) {
    // Some rank has no object for this op, or not the one the others would use: all ranks
    // build one now, so the slots it claims match everywhere. Destroying an old one is safe
    // here: every rank has reached the agreement, so everything it sent has been received.
    if (hit) entries_.pop_front();
    entries_.push_front(Entry{key, builds_++, make_allreduce(comm, op, algorithm)});
    if (entries_.size() > kCapacity) entries_.pop_back();
  }
  entries_.front().algorithm->run();
}

void ReduceScatterCache::run(cb_comm& comm, const CheckedOp& op) {
  const Key key{op.count, op.dtype, op.redop};
  const size_t total_bytes = op.bytes * comm.size;
  // The key is the same on every rank, so hits and misses (and the slots they claim) agree.
  if (!bring_to_front(entries_, key)) {
    // Safe to destroy: its run() completed its own sends and received every message addressed
    // to this rank, and every rank builds the same objects in the same order.
    if (entries_.size() == kCapacity) entries_.pop_back();
    Entry entry{key, std::make_unique_for_overwrite<std::byte[]>(total_bytes), nullptr};
    const int total_count = static_cast<int>(op.count * comm.size);  // bounded by check_op
    const std::vector<int> block_counts(comm.size, static_cast<int>(op.count));
    entry.algorithm = with_storage_type(op.element_size, [&](auto storage) -> std::unique_ptr<gloo::Algorithm> {
      using T = decltype(storage);
      return std::make_unique<ReduceScatterHalvingDoubling<T>>(comm.context, reinterpret_cast<T*>(entry.buffer.get()),
                                                             total_count, block_counts,
                                                             legacy_reduction(T{}, op.dtype, op.redop));
    });
    entries_.push_front(std::move(entry));
  }
  Entry& entry = entries_.front();
  std::memcpy(entry.buffer.get(), op.sendbuf, total_bytes);
  entry.algorithm->run();
  // The algorithm leaves this rank's reduced block at the start of its buffer.
  std::memcpy(op.recvbuf, entry.buffer.get(), op.bytes);
}

}  // namespace commbench::gloo_backend
