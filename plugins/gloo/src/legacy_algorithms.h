// gloo's old-style algorithm objects (AllreduceRingChunked, AllreduceHalvingDoubling,
// ReduceScatterHalvingDoubling). Unlike the new-style functions they are constructed once for
// one buffer and then run many times; construction allocates work buffers and claims
// connection slots, so it is expensive and is cached here.
//
// Slots are claimed from a per-context counter, so every rank must construct the same objects
// in the same order or the slots stop matching and the ranks wait on each other forever.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>

#include <gloo/algorithm.h>

#include "commbench/backend.h"
#include "options.h"

struct cb_comm;

namespace commbench::gloo_backend {

struct CheckedOp;

// In-place allreduce through ring_chunked or halving_doubling, cached per
// (buffer, count, dtype, redop, algorithm). Buffers are per rank: one rank may reuse an address
// while another does not, so a local hit proves nothing about the other ranks. Every object is
// built by all ranks together and numbered by that collective build (its generation); before
// each op the ranks compare the generations they would use with a 16-byte allreduce, and run
// the cached objects only if all ranks hold the same generation; otherwise all build anew.
// That agreement is part of the timed op (about one 16-byte ring allreduce).
class LegacyAllreduceCache {
 public:
  void run(cb_comm& comm, const CheckedOp& op, AllreduceAlgorithm algorithm);

 private:
  struct Key {
    void* buffer;
    size_t count;
    cb_dtype dtype;
    cb_redop redop;
    AllreduceAlgorithm algorithm;
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key;
    int64_t generation;  // which collective build made it: equal on every rank
    std::unique_ptr<gloo::Algorithm> algorithm;
  };
  static constexpr size_t kCapacity = 2;  // a size sweep needs one; keep memory bounded
  std::list<Entry> entries_;              // most recently used first
  int64_t builds_ = 0;                    // collective builds so far: the next generation
};

// Reduce-scatter through gloo's ReduceScatterHalvingDoubling (with the waits it lacks, see
// reduce_scatter_halving_doubling.h), which reduces in place and leaves the
// rank's block at the start of its buffer. It runs on a plugin-owned buffer, so the cache key
// (count, dtype, redop) is the same on every rank and needs no agreement: the input
// (count * world elements) is copied in and the rank's block copied out, inside the timed op,
// for both placements.
class ReduceScatterCache {
 public:
  void run(cb_comm& comm, const CheckedOp& op);

 private:
  struct Key {
    size_t count;
    cb_dtype dtype;
    cb_redop redop;
    bool operator==(const Key&) const = default;
  };
  struct Entry {
    Key key;
    std::unique_ptr<std::byte[]> buffer;         // declared first: outlives the algorithm
    std::unique_ptr<gloo::Algorithm> algorithm;  // bound to buffer
  };
  static constexpr size_t kCapacity = 2;
  std::list<Entry> entries_;
};

}  // namespace commbench::gloo_backend
