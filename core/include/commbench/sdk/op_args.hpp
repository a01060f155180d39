// The checks every plugin's post() makes before touching its library, written once: the host's
// struct read per the struct_size rule, what the plugin does not advertise refused with
// CB_ERR_UNIMPLEMENTED (the core records the case as unsupported and goes on), and what no
// caller should pass refused with CB_ERR_INVALID_ARGUMENT (the core fails the run).
// `commbench conformance` probes each of these. Header-only plugin SDK (C++20).
//
//   cb_op_args a = sdk::checked_op_args(*args, rank, world_size, my_capabilities);
//   // a.op, a.dtype, a.redop are known to this header, advertised, and root/peer are ranks.
//
// Every check depends only on values all ranks share (op, count, dtype, redop, root, memory,
// placement) except the buffer checks, so an unsupported case is refused the same way on every
// rank and no rank is left waiting in a collective the others refused.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "commbench/backend.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/plugin_error.hpp"

namespace commbench::sdk {

// Every field of ABI 1.0's cb_op_args is needed by some op: a smaller struct comes from a broken
// host and is refused rather than guessed about.
inline constexpr size_t kOpArgsMinSize = CB_STRUCT_SIZE(cb_op_args, tag);

inline constexpr bool is_rooted(cb_op op) {
  return op == CB_OP_BROADCAST || op == CB_OP_REDUCE || op == CB_OP_GATHER || op == CB_OP_SCATTER;
}
inline constexpr bool is_point_to_point(cb_op op) { return op == CB_OP_SEND || op == CB_OP_RECV; }

// Whether `a` uses the in-place layout of docs/plugin-abi.md §9 on `rank` (byte offsets of whole
// blocks). Gather and scatter are in place only at the root; elsewhere they have one buffer.
inline bool is_in_place(const cb_op_args& a, int rank) {
  const auto* send = static_cast<const unsigned char*>(a.sendbuf);
  const auto* recv = static_cast<const unsigned char*>(a.recvbuf);
  if (send == nullptr || recv == nullptr) return false;
  const size_t block = a.count * dtype_size(a.dtype);
  switch (a.op) {
    case CB_OP_ALLGATHER: return send == recv + static_cast<size_t>(rank) * block;
    case CB_OP_REDUCESCATTER: return recv == send + static_cast<size_t>(rank) * block;
    case CB_OP_GATHER: return rank == a.root && send == recv + static_cast<size_t>(a.root) * block;
    case CB_OP_SCATTER: return rank == a.root && recv == send + static_cast<size_t>(a.root) * block;
    case CB_OP_BARRIER: case CB_OP_SEND: case CB_OP_RECV: return false;
    default: return send == recv;
  }
}

namespace detail {
// Enum values come from another binary: compare as integers (abi_value), whatever the enum's type.
inline bool in_bits(int32_t value, int count, uint64_t bits) {
  return value >= 0 && value < count && (bits & CB_BIT(value)) != 0;
}
inline void set_raw(void* field, int32_t value) { std::memcpy(field, &value, sizeof value); }
}  // namespace detail

// Copies the host's struct, reading only what its struct_size covers. Its enum fields are
// range-checked as integers before anything reads them as enums (abi_value): an op, memory
// type, dtype or reduce op this header does not know is refused with CB_ERR_UNIMPLEMENTED
// ("from a newer host"); a dtype or reduce op the op does not use is set to 0, so that no later
// code loads an unknown value. Afterwards every enum field of the result is a known value.
inline cb_op_args read_op_args(const cb_op_args& given) {
  if (given.struct_size < kOpArgsMinSize)
    fail(CB_ERR_INVALID_ARGUMENT, "cb_op_args.struct_size is " + std::to_string(given.struct_size) + ", smaller than ABI 1.0's " +
                                      std::to_string(kOpArgsMinSize) + ": fill it with CB_STRUCT_SIZE(cb_op_args, tag)");
  cb_op_args a{};
  // ABI 1.0's struct (the smallest accepted, checked above) holds every field this header knows,
  // so that is what is copied, with a fixed size the compiler inlines: this runs on every op. A
  // newer host's longer struct is read as far as this header knows it.
  static_assert(sizeof(cb_op_args) - kOpArgsMinSize < alignof(cb_op_args),
                "cb_op_args has a field after `tag`: copy min(struct_size, its end) here");
  std::memcpy(&a, &given, kOpArgsMinSize);
  const auto op = abi_enum<cb_op>(abi_value(a.op), CB_OP_COUNT_V1);
  if (!op) fail(CB_ERR_UNIMPLEMENTED, "op " + std::to_string(abi_value(a.op)) + " is not supported by this plugin (a newer host?)");
  if (!abi_enum<cb_mem>(abi_value(a.mem_type), CB_MEM_COUNT_V1))
    fail(CB_ERR_UNIMPLEMENTED, "memory type " + std::to_string(abi_value(a.mem_type)) +
                                   " is not supported by this plugin (a newer host?)");
  if (!abi_enum<cb_dtype>(abi_value(a.dtype), CB_DTYPE_COUNT_V1)) {
    if (*op != CB_OP_BARRIER)
      fail(CB_ERR_UNIMPLEMENTED, "dtype " + std::to_string(abi_value(a.dtype)) + " is not supported for " +
                                     std::string(op_name(*op)) + " by this plugin (a newer host?)");
    detail::set_raw(&a.dtype, 0);
  }
  if (!abi_enum<cb_redop>(abi_value(a.redop), CB_REDOP_COUNT_V1)) {
    if (is_reduction(*op))
      fail(CB_ERR_UNIMPLEMENTED, "reduce op " + std::to_string(abi_value(a.redop)) +
                                     " is not supported by this plugin (a newer host?)");
    detail::set_raw(&a.redop, 0);
  }
  return a;
}

namespace detail {
inline void require_buffer(const void* p, const char* which, cb_op op) {
  if (p == nullptr)
    fail(CB_ERR_INVALID_ARGUMENT, std::string(op_name(op)) + ": " + which + " is NULL but count > 0");
}
}  // namespace detail

// Refuses with CB_ERR_UNIMPLEMENTED what `caps` does not advertise: the op, the dtype (the
// reduction set for reductions), the reduce op, the memory type, the placement.
// Every enum is read as an integer (abi_value) and named only when known, so this is safe on a
// struct that did not come through read_op_args.
inline void require_advertised(const cb_op_args& a, const cb_capabilities& caps, int rank) {
  const int32_t op = abi_value(a.op), mem = abi_value(a.mem_type), dtype = abi_value(a.dtype), redop = abi_value(a.redop);
  if (!detail::in_bits(op, CB_OP_COUNT_V1, caps.ops))
    fail(CB_ERR_UNIMPLEMENTED, "op " + (op >= 0 && op < CB_OP_COUNT_V1 ? std::string(op_name(a.op)) : std::to_string(op)) +
                                   " is not supported by this plugin");
  if (!detail::in_bits(mem, CB_MEM_COUNT_V1, caps.mem_types))
    fail(CB_ERR_UNIMPLEMENTED, "memory type " + (mem >= 0 && mem < CB_MEM_COUNT_V1 ? std::string(mem_name(a.mem_type)) : std::to_string(mem)) +
                                   " is not supported by this plugin");
  if (a.op == CB_OP_BARRIER) return;
  const bool reduction = is_reduction(a.op);
  if (!detail::in_bits(dtype, CB_DTYPE_COUNT_V1, reduction ? caps.reduce_dtypes : caps.dtypes))
    fail(CB_ERR_UNIMPLEMENTED, "dtype " + (dtype >= 0 && dtype < CB_DTYPE_COUNT_V1 ? std::string(dtype_name(a.dtype)) : std::to_string(dtype)) +
                                   " is not supported for " + std::string(op_name(a.op)) + " by this plugin");
  if (reduction && !detail::in_bits(redop, CB_REDOP_COUNT_V1, caps.redops))
    fail(CB_ERR_UNIMPLEMENTED, "reduce op " + (redop >= 0 && redop < CB_REDOP_COUNT_V1 ? std::string(redop_name(a.redop)) : std::to_string(redop)) +
                                   " is not supported by this plugin");
  if (is_point_to_point(a.op) || a.count == 0) return;
  const bool in_place = is_in_place(a, rank);
  if (in_place && !(caps.flags & CB_CAP_IN_PLACE))
    fail(CB_ERR_UNIMPLEMENTED, std::string(op_name(a.op)) + " in place is not supported by this plugin");
  if (!in_place && !(caps.flags & CB_CAP_OUT_OF_PLACE) && !((a.op == CB_OP_GATHER || a.op == CB_OP_SCATTER) && rank != a.root))
    fail(CB_ERR_UNIMPLEMENTED, std::string(op_name(a.op)) + " out of place is not supported by this plugin");
}

// Refuses with CB_ERR_INVALID_ARGUMENT a root or peer that is not a rank, a count whose buffers
// overflow the address space, and a NULL buffer the op reads or writes on this rank.
inline void require_valid(const cb_op_args& a, int rank, int world_size) {
  if (is_rooted(a.op) && (a.root < 0 || a.root >= world_size))
    fail(CB_ERR_INVALID_ARGUMENT, std::string(op_name(a.op)) + ": root " + std::to_string(a.root) +
                                      " is not a rank of 0.." + std::to_string(world_size - 1));
  if (is_point_to_point(a.op) && (a.peer < 0 || a.peer >= world_size))
    fail(CB_ERR_INVALID_ARGUMENT, std::string(op_name(a.op)) + ": peer " + std::to_string(a.peer) +
                                      " is not a rank of 0.." + std::to_string(world_size - 1));
  if (a.op == CB_OP_BARRIER || a.count == 0) return;
  size_t bytes = 0;  // multiplied, not divided: two divisions per op were a measurable part of a small op
  if (__builtin_mul_overflow(a.count, dtype_size(a.dtype), &bytes) ||
      __builtin_mul_overflow(bytes, static_cast<size_t>(world_size), &bytes))
    fail(CB_ERR_INVALID_ARGUMENT, std::string(op_name(a.op)) + ": count " + std::to_string(a.count) +
                                      " overflows the address space");
  const bool root = rank == a.root;
  switch (a.op) {
    case CB_OP_BROADCAST: case CB_OP_SCATTER:
      if (root) detail::require_buffer(a.sendbuf, "sendbuf (root)", a.op);
      detail::require_buffer(a.recvbuf, "recvbuf", a.op);
      break;
    case CB_OP_REDUCE: case CB_OP_GATHER:
      detail::require_buffer(a.sendbuf, "sendbuf", a.op);
      if (root) detail::require_buffer(a.recvbuf, "recvbuf (root)", a.op);
      break;
    case CB_OP_SEND: detail::require_buffer(a.sendbuf, "sendbuf", a.op); break;
    case CB_OP_RECV: detail::require_buffer(a.recvbuf, "recvbuf", a.op); break;
    default:
      detail::require_buffer(a.sendbuf, "sendbuf", a.op);
      detail::require_buffer(a.recvbuf, "recvbuf", a.op);
  }
}

// All of the above, in the order the core relies on: the struct, then what the plugin does not
// support (UNIMPLEMENTED: the case is skipped), then what is wrong (INVALID_ARGUMENT).
inline cb_op_args checked_op_args(const cb_op_args& given, int rank, int world_size, const cb_capabilities& caps) {
  const cb_op_args a = read_op_args(given);
  require_advertised(a, caps, rank);
  require_valid(a, rank, world_size);
  return a;
}

// The last N structs a check accepted, byte for byte. A benchmark posts the same few ops over and
// over (a ping-pong rank alternates one send and one receive), and on a sub-microsecond op the
// checks are a measurable share (about 7 % of a 2-rank UCX ping-pong's CPU samples). Contract:
// `check` depends only on the bytes read_op_args reads (ABI 1.0's struct) and on state fixed for
// the communicator's life (rank, world size, capabilities), so an equal struct gets the same
// answer. A struct that fails is never remembered: it throws every time. Not thread-safe: one
// per communicator, used by the thread that posts.
template <size_t N = 2>
class CheckedArgsCache {
  static_assert(N > 0);
  // The key is what read_op_args reads: a field after `tag` would have to join it.
  static_assert(sizeof(cb_op_args) - kOpArgsMinSize < alignof(cb_op_args),
                "cb_op_args has a field after `tag`: compare it too");

 public:
  // The checked struct, by reference (not copied on the per-op path): valid until the next get.
  // Small enough to inline into a plugin's post path; a miss goes out of line.
  template <class Check>
  const cb_op_args& get(const cb_op_args& given, Check&& check) {
    // Shorter than ABI 1.0: not read past its end here; `check` refuses it.
    if (given.struct_size >= kOpArgsMinSize) [[likely]]
      for (const Entry& e : entries_)
        if (same_key(e.given, &given)) return e.checked;
    return miss(given, check);
  }

 private:
  template <class Check>
  [[gnu::noinline]] const cb_op_args& miss(const cb_op_args& given, Check& check) {
    const cb_op_args checked = check(given);  // throws: nothing is remembered
    if (given.struct_size < kOpArgsMinSize) return uncached_ = checked;
    Entry& e = entries_[next_];
    next_ = (next_ + 1) % N;
    std::memcpy(e.given, &given, kOpArgsMinSize);
    e.checked = checked;
    return e.checked;
  }

  // Out at the first 16 bytes when they differ (they hold struct_size and op: the entry for the
  // other op of a ping-pong), else the rest in four more compares and one branch. Per lookup
  // under callgrind, the returned copy and the loop over entries included: memcmp (a call and
  // libc's size dispatch) about 80 instructions, 8-byte words one by one 71, this about 37.
#if defined(__SSE2__)
  static bool same_key(const unsigned char* kept, const cb_op_args* given) {
    static_assert(kOpArgsMinSize > 64 && kOpArgsMinSize <= 80, "five 16-byte compares cover the key");
    const auto* g = reinterpret_cast<const unsigned char*>(given);
    auto equal = [&](size_t at) {  // the last one overlaps the one before it: never past the key
      return _mm_cmpeq_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kept + at)),
                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(g + at)));
    };
    if (_mm_movemask_epi8(equal(0)) != 0xFFFF) return false;
    const __m128i rest = _mm_and_si128(_mm_and_si128(equal(16), equal(32)),
                                       _mm_and_si128(equal(48), equal(kOpArgsMinSize - 16)));
    return _mm_movemask_epi8(rest) == 0xFFFF;
  }
#else
  static bool same_key(const unsigned char* kept, const cb_op_args* given) {
    return std::memcmp(kept, given, kOpArgsMinSize) == 0;
  }
#endif
  // An unused entry is all zeros: its struct_size, 0, matches no struct that is compared.
  struct Entry {
    unsigned char given[kOpArgsMinSize];
    cb_op_args checked;
  };
  Entry entries_[N]{};
  size_t next_ = 0;
  cb_op_args uncached_{};  // what get returns for a struct too short to compare
};

}  // namespace commbench::sdk
