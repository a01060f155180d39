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
  template <class Check>
  cb_op_args get(const cb_op_args& given, Check&& check) {
    // Shorter than ABI 1.0: not read past its end here; `check` refuses it.
    const bool comparable = given.struct_size >= kOpArgsMinSize;
    if (comparable)
      for (const Entry& e : entries_)
        if (e.valid && same_key(e.given, &given)) return e.checked;
    const cb_op_args checked = check(given);  // throws: nothing is remembered
    if (!comparable) return checked;
    Entry& e = entries_[next_];
    next_ = (next_ + 1) % N;
    std::memcpy(e.given, &given, kOpArgsMinSize);
    e.checked = checked;
    e.valid = true;
    return e.checked;
  }

 private:
  // Word by word, unrolled, out at the first word that differs (an entry for the other op of a
  // ping-pong differs in its second word): memcmp cost a call and libc's size dispatch on every
  // op, about 80 instructions per lookup under callgrind, and a loop here not much less.
  template <size_t... I>
  static bool same_words(const unsigned char* a, const unsigned char* b, std::index_sequence<I...>) {
    auto word = [](const unsigned char* p, size_t i) {
      uint64_t w;
      std::memcpy(&w, p + 8 * i, 8);
      return w;
    };
    return ((word(a, I) == word(b, I)) && ...);
  }
  static bool same_key(const unsigned char* kept, const cb_op_args* given) {
    const auto* g = reinterpret_cast<const unsigned char*>(given);
    constexpr size_t kWords = kOpArgsMinSize / 8, kTail = kOpArgsMinSize % 8;
    if (!same_words(kept, g, std::make_index_sequence<kWords>{})) return false;
    if constexpr (kTail > 0) {
      uint64_t a = 0, b = 0;
      std::memcpy(&a, kept + 8 * kWords, kTail);
      std::memcpy(&b, g + 8 * kWords, kTail);
      return a == b;
    }
    return true;
  }
  struct Entry {
    unsigned char given[kOpArgsMinSize];
    cb_op_args checked;
    bool valid = false;
  };
  Entry entries_[N]{};
  size_t next_ = 0;
};

}  // namespace commbench::sdk
