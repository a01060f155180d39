#include "measure/check_pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "measure/check_values.h"

namespace commbench {
namespace {

using check_values::Expected;

// Compares regions of one receive buffer with what they must hold; keeps the count and the
// first mismatch.
class Comparison {
 public:
  Comparison(const CheckContext& c, const void* recv) : c_(c), recv_(recv) {}

  // Elements [offset, offset+n) hold reduction results: expected(i) for i in [0, n).
  template <class F>
  void values(uint64_t offset, uint64_t n, F&& expected) {
    for (uint64_t i = 0; i < n; ++i) {
      const Expected want = expected(i);
      const double got = sdk::load_as_double(c_.dtype, recv_, offset + i);
      if (got == want.value || std::fabs(got - want.value) <= want.tolerance) continue;
      miss(offset + i, want.value, reported(offset + i, got));
    }
  }
  // Elements [offset, offset+n) hold block `key`'s elements 0..n-1, bit for bit.
  void moved(uint64_t offset, uint64_t n, uint64_t key) {
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t want = check_values::moved_bits(c_.dtype, key, i);
      const uint64_t got = check_values::load_bits(c_.dtype, recv_, offset + i);
      if (got != want) miss(offset + i, check_values::bits_value(c_.dtype, want), reported(offset + i, check_values::bits_value(c_.dtype, got)));
    }
  }
  // Elements [offset, offset+n) were not to be written: they still hold the poison.
  void untouched(uint64_t offset, uint64_t n) {
    const uint64_t poison = check_values::poison_bits(c_.dtype);
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t got = check_values::load_bits(c_.dtype, recv_, offset + i);
      if (got != poison) miss(offset + i, kNothing, check_values::bits_value(c_.dtype, got));
    }
  }
  CheckResult result() const { return result_; }

 private:
  // Mismatch reports the poison as NaN whatever the dtype: "nothing written" / "leave untouched".
  static constexpr double kNothing = std::numeric_limits<double>::quiet_NaN();
  double reported(uint64_t index, double got) const {
    return check_values::load_bits(c_.dtype, recv_, index) == check_values::poison_bits(c_.dtype) ? kNothing : got;
  }
  void miss(uint64_t index, double expected, double got) {
    if (result_.wrong++ == 0) result_.first = Mismatch{index, expected, got};
  }
  const CheckContext& c_;
  const void* recv_;
  CheckResult result_;
};

}  // namespace

void poison_recv(const CheckContext& c, void* recv, uint64_t recv_elems) {
  const uint64_t poison = check_values::poison_bits(c.dtype);
  for (uint64_t i = 0; i < recv_elems; ++i) check_values::store_bits(c.dtype, recv, i, poison);
}

void fill_send(const CheckContext& c, void* send, uint64_t send_elems) {
  if (op_info(c.op).reduction) {
    const check_values::ReducePattern pattern(c);
    for (uint64_t i = 0; i < send_elems; ++i) sdk::store_from_double(c.dtype, send, i, pattern.input(c.rank, i));
    return;
  }
  // Alltoall and scatter: block j is destined for rank j, and says so.
  const bool per_destination = c.op == OpKind::Alltoall || c.op == OpKind::Scatter;
  const uint64_t block = per_destination ? std::max<uint64_t>(c.count, 1) : std::max<uint64_t>(send_elems, 1);
  for (uint64_t start = 0; start < send_elems; start += block) {
    const uint64_t key = check_values::moved_key(c.rank, per_destination ? static_cast<int>(start / block) : -1, c.generation);
    for (uint64_t i = 0; i < block && start + i < send_elems; ++i)
      check_values::store_bits(c.dtype, send, start + i, check_values::moved_bits(c.dtype, key, i));
  }
}

CheckResult check_recv(const CheckContext& c, const void* recv, uint64_t recv_elems) {
  (void)recv_elems;
  const uint64_t n = c.count;
  Comparison cmp(c, recv);
  const bool reduction = op_info(c.op).reduction;
  const std::optional<check_values::ReducePattern> pattern =
      reduction ? std::optional<check_values::ReducePattern>(std::in_place, c) : std::nullopt;
  auto reduced = [&](uint64_t base) {
    cmp.values(0, n, [&](uint64_t i) { return pattern->expected(base + i); });
  };
  // A rank that must get nothing: its buffer still holds what it held before the op (its own
  // input where the in-place layout put it there, the poison everywhere else).
  auto unchanged_moved = [&](uint64_t blocks) {
    for (uint64_t b = 0; b < blocks; ++b) {
      if (c.in_place && b == static_cast<uint64_t>(c.rank) % blocks) cmp.moved(b * n, n, check_values::moved_key(c.rank, -1, c.generation));
      else cmp.untouched(b * n, n);
    }
  };
  switch (c.op) {
    case OpKind::Allreduce:
      reduced(0);
      break;
    case OpKind::Reduce:
      if (c.rank == c.root) reduced(0);
      else if (c.in_place)
        cmp.values(0, n, [&](uint64_t i) { return Expected{pattern->input(c.rank, i), 0}; });
      else cmp.untouched(0, n);
      break;
    case OpKind::Reducescatter:
      reduced(static_cast<uint64_t>(c.rank) * n);
      break;
    case OpKind::Allgather:
      for (int b = 0; b < c.world; ++b) cmp.moved(static_cast<uint64_t>(b) * n, n, check_values::moved_key(b, -1, c.generation));
      break;
    case OpKind::Gather:
      if (c.rank == c.root)
        for (int b = 0; b < c.world; ++b) cmp.moved(static_cast<uint64_t>(b) * n, n, check_values::moved_key(b, -1, c.generation));
      else unchanged_moved(static_cast<uint64_t>(c.world));
      break;
    case OpKind::Broadcast:
      cmp.moved(0, n, check_values::moved_key(c.root, -1, c.generation));
      break;
    case OpKind::Alltoall:
      for (int b = 0; b < c.world; ++b) cmp.moved(static_cast<uint64_t>(b) * n, n, check_values::moved_key(b, c.rank, c.generation));
      break;
    case OpKind::Scatter:
      cmp.moved(0, n, check_values::moved_key(c.root, c.rank, c.generation));
      break;
    case OpKind::PingPong:
    case OpKind::UnidirBw:
      // The second peer receives the first peer's data (pingpong's reply is checked the same way).
      if (c.rank == c.peers[1]) cmp.moved(0, n, check_values::moved_key(c.peers[0], -1, c.generation));
      else if (c.op == OpKind::PingPong && c.rank == c.peers[0]) cmp.moved(0, n, check_values::moved_key(c.peers[1], -1, c.generation));
      else unchanged_moved(1);
      break;
    case OpKind::SendRecvRing:
      cmp.moved(0, n, check_values::moved_key((c.rank + c.world - 1) % c.world, -1, c.generation));
      break;
    case OpKind::BidirBw:
      if (c.rank == c.peers[0] || c.rank == c.peers[1])
        cmp.moved(0, n, check_values::moved_key(c.rank == c.peers[0] ? c.peers[1] : c.peers[0], -1, c.generation));
      else unchanged_moved(1);
      break;
    case OpKind::MsgRate: {
      // Ranks n/2 .. 2*(n/2)-1 receive from their partner in the first half.
      const int pairs = msg_rate_pairs(c.world);
      if (c.rank >= pairs && c.rank < 2 * pairs) cmp.moved(0, n, check_values::moved_key(c.rank - pairs, -1, c.generation));
      else unchanged_moved(1);
      break;
    }
    case OpKind::AllPairs:  // checked by the all-pairs driver (measure/all_pairs.h)
    case OpKind::Barrier:
      break;
  }
  return cmp.result();
}

std::string_view checked_buffer_name(CheckedBuffer b) {
  switch (b) {
    case CheckedBuffer::kRecv: return "recv";
    case CheckedBuffer::kPastRecvEnd: return "past_recv_end";
    case CheckedBuffer::kSend: return "send";
    case CheckedBuffer::kPastSendEnd: return "past_send_end";
    case CheckedBuffer::kBeforeRecvStart: return "before_recv_start";
    case CheckedBuffer::kBeforeSendStart: return "before_send_start";
  }
  return "recv";
}

std::string outside_text(std::string_view buffer_name, uint64_t index, std::string_view whose) {
  const bool past = buffer_name == "past_recv_end" || buffer_name == "past_send_end";
  const bool before = buffer_name == "before_recv_start" || buffer_name == "before_send_start";
  if (!past && !before) return "";
  const bool send = buffer_name == "past_send_end" || buffer_name == "before_send_start";
  return fmt::format("wrote {} {} {} buffer, element {} {} it", past ? "past the end of" : "before the start of", whose,
                     send ? "send" : "receive", index, past ? "after" : "before");
}

namespace {
// Varies with the offset, so that neither a constant fill nor a copied pattern matches it, and
// with the generation: 0x4B apart at every byte from one generation to the next, so a stray
// write of the value one generation's guard holds there is caught by the other's.
unsigned char guard_byte(size_t i, uint32_t generation) {
  return static_cast<unsigned char>(0x5A + 0x4B * generation + i * 7);
}
}  // namespace

void fill_guard(void* guard, size_t bytes, uint32_t generation) {
  auto* p = static_cast<unsigned char*>(guard);
  for (size_t i = 0; i < bytes; ++i) p[i] = guard_byte(i, generation);
}

CheckResult check_guard(const void* guard, size_t bytes, size_t elem_size, CheckedBuffer which, uint32_t generation) {
  CheckResult r;
  const auto* p = static_cast<const unsigned char*>(guard);
  elem_size = std::max<size_t>(elem_size, 1);
  const size_t elems = (bytes + elem_size - 1) / elem_size;
  // Before a buffer, the element next to it is the guard's last: count from there.
  const bool before = which == CheckedBuffer::kBeforeRecvStart || which == CheckedBuffer::kBeforeSendStart;
  for (size_t k = 0; k < elems; ++k) {
    const size_t e = before ? elems - 1 - k : k;
    for (size_t b = e * elem_size; b < std::min(bytes, (e + 1) * elem_size); ++b) {
      if (p[b] == guard_byte(b, generation)) continue;
      if (r.wrong++ == 0) r.first = Mismatch{k, std::numeric_limits<double>::quiet_NaN(), static_cast<double>(p[b]), which};
      break;
    }
  }
  return r;
}

CheckResult check_send_unchanged(const CheckContext& c, const void* send, uint64_t send_elems) {
  CheckResult r;
  const size_t es = sdk::dtype_size(c.dtype);
  std::vector<unsigned char> want(send_elems * es);
  fill_send(c, want.data(), send_elems);
  const auto* got = static_cast<const unsigned char*>(send);
  for (uint64_t i = 0; i < send_elems; ++i) {
    if (std::memcmp(got + i * es, want.data() + i * es, es) == 0) continue;
    if (r.wrong++ == 0)
      r.first = Mismatch{i, sdk::load_as_double(c.dtype, want.data(), i), sdk::load_as_double(c.dtype, send, i),
                         CheckedBuffer::kSend};
  }
  return r;
}

void merge_check(CheckResult& total, const CheckResult& more) {
  total.wrong += more.wrong;
  if (!total.first && more.first) total.first = more.first;
}

}  // namespace commbench
