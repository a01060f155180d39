#include "op_cases.h"

#include <cstring>
#include <sstream>
#include <stdexcept>

#include "commbench/sdk/dtypes.hpp"
#include "patterns.h"

namespace commbench::test {
namespace {

using Bytes = std::vector<std::byte>;

Bytes sentinel_buffer(size_t bytes) { return Bytes(bytes, std::byte{kSentinel}); }

bool all_sentinel(const void* buffer, size_t bytes) {
  const auto* in = static_cast<const uint8_t*>(buffer);
  for (size_t i = 0; i < bytes; ++i)
    if (in[i] != kSentinel) return false;
  return true;
}

// Checks count elements of `buffer` against the reduction of element first_index + i.
void expect_reduced(const OpCase& c, int world_size, const void* buffer, size_t first_index,
                    RankChecks& checks, const std::string& where) {
  for (size_t i = 0; i < c.count; ++i) {
    const double got = sdk::load_as_double(c.dtype, buffer, i);
    const double want = expected_reduction(c.redop, world_size, first_index + i);
    if (got != want) {
      checks.expect(false, c.describe() + ": " + where + "[" + std::to_string(i) + "] = " +
                               std::to_string(got) + ", expected " + std::to_string(want));
      return;  // one message per buffer is enough
    }
  }
}

void expect_input_unchanged(const OpCase& c, int rank, const void* buffer, size_t count,
                            size_t first_index, RankChecks& checks, const std::string& what) {
  Bytes original(count * sdk::dtype_size(c.dtype));
  fill_reduction_input(c.dtype, original.data(), count, rank, first_index);
  checks.expect(std::memcmp(original.data(), buffer, original.size()) == 0,
                c.describe() + ": " + what + " was modified");
}

void expect_block(const OpCase& c, const void* buffer, size_t bytes, int origin, size_t block,
                  RankChecks& checks, const std::string& where) {
  const size_t bad = first_movement_mismatch(buffer, bytes, origin, block);
  checks.expect(bad == bytes, c.describe() + ": " + where + " byte " + std::to_string(bad) +
                                  " is not from rank " + std::to_string(origin) + "'s block " +
                                  std::to_string(block));
}

bool posted(RankSession& session, const cb_op_args& args, const OpCase& c, RankChecks& checks) {
  const Status status = session.run(args);
  checks.expect(status.ok(), c.describe() + ": failed: " + status.message);
  return status.ok();
}

}  // namespace

std::string OpCase::describe() const {
  std::ostringstream out;
  out << sdk::op_name(op) << " " << sdk::dtype_name(dtype);
  if (sdk::is_reduction(op)) out << " " << sdk::redop_name(redop);
  out << (in_place ? " in-place" : " out-of-place") << " count=" << count;
  if (op == CB_OP_BROADCAST || op == CB_OP_REDUCE || op == CB_OP_GATHER || op == CB_OP_SCATTER)
    out << " root=" << root;
  return out.str();
}

void RankChecks::expect(bool condition, const std::string& what) {
  if (condition) return;
  if (kept_.size() < kMaxKept) kept_.push_back(what);
  ++failed_;
}

void RankChecks::finish() const {
  if (failed_ == 0) return;
  std::string message = std::to_string(failed_) + " failed checks on rank " + std::to_string(rank_) + ":";
  for (const std::string& line : kept_) message += "\n  " + line;
  throw std::runtime_error(message);
}

void run_reduction_case(RankSession& session, const OpCase& c, RankChecks& checks) {
  const int rank = session.rank();
  const int world = session.world_size();
  const size_t bytes = c.count * sdk::dtype_size(c.dtype);
  const bool is_root = rank == c.root;

  if (c.op == CB_OP_REDUCESCATTER) {
    // sendbuf: count*world elements (global index k); recvbuf: this rank's block of count.
    Bytes send(bytes * world);
    fill_reduction_input(c.dtype, send.data(), c.count * world, rank);
    Bytes recv = sentinel_buffer(bytes);
    void* out = c.in_place ? send.data() + bytes * rank : recv.data();
    if (!posted(session, make_args(c.op, send.data(), out, c.count, c.dtype, c.redop), c, checks)) return;
    expect_reduced(c, world, out, c.count * rank, checks, "recvbuf");
    if (!c.in_place) expect_input_unchanged(c, rank, send.data(), c.count * world, 0, checks, "sendbuf");
    return;
  }

  // allreduce and reduce: count elements in and out.
  Bytes send(bytes);
  fill_reduction_input(c.dtype, send.data(), c.count, rank);
  Bytes recv = sentinel_buffer(bytes);
  void* out = c.in_place ? send.data() : recv.data();
  if (!posted(session, make_args(c.op, send.data(), out, c.count, c.dtype, c.redop, c.root), c, checks)) return;
  if (c.op == CB_OP_ALLREDUCE || is_root) {
    expect_reduced(c, world, out, 0, checks, "recvbuf");
    if (!c.in_place) expect_input_unchanged(c, rank, send.data(), c.count, 0, checks, "sendbuf");
    return;
  }
  // A non-root's buffers are not the op's to change (NCCL semantics).
  expect_input_unchanged(c, rank, send.data(), c.count, 0, checks, "non-root sendbuf");
  if (!c.in_place) checks.expect(all_sentinel(recv.data(), bytes), c.describe() + ": non-root recvbuf was written");
}

void run_movement_case(RankSession& session, const OpCase& c, RankChecks& checks) {
  const int rank = session.rank();
  const int world = session.world_size();
  const size_t bytes = c.count * sdk::dtype_size(c.dtype);
  const size_t total = bytes * world;
  const bool is_root = rank == c.root;

  switch (c.op) {
    case CB_OP_ALLGATHER: {
      Bytes recv = sentinel_buffer(total);
      Bytes send(bytes);
      fill_movement(send.data(), bytes, rank, 0);
      const void* in = send.data();
      if (c.in_place) {  // this rank's block already in place: sendbuf = recvbuf + rank*count
        std::memcpy(recv.data() + bytes * rank, send.data(), bytes);
        in = recv.data() + bytes * rank;
      }
      if (!posted(session, make_args(c.op, in, recv.data(), c.count, c.dtype), c, checks)) return;
      for (int origin = 0; origin < world; ++origin)
        expect_block(c, recv.data() + bytes * origin, bytes, origin, 0, checks, "recvbuf block " + std::to_string(origin));
      return;
    }
    case CB_OP_BROADCAST: {
      Bytes send(bytes);
      fill_movement(send.data(), bytes, c.root, 0);
      Bytes recv = sentinel_buffer(bytes);
      if (c.in_place && is_root) recv = send;
      // sendbuf matters only at the root: others pass NULL.
      const void* in = !is_root ? nullptr : c.in_place ? recv.data() : send.data();
      if (!posted(session, make_args(c.op, in, recv.data(), c.count, c.dtype, CB_REDOP_SUM, c.root), c, checks)) return;
      expect_block(c, recv.data(), bytes, c.root, 0, checks, "recvbuf");
      if (is_root && !c.in_place) expect_block(c, send.data(), bytes, c.root, 0, checks, "root sendbuf");
      return;
    }
    case CB_OP_ALLTOALL: {
      Bytes send(total);
      for (int peer = 0; peer < world; ++peer) fill_movement(send.data() + bytes * peer, bytes, rank, peer);
      Bytes recv = sentinel_buffer(total);
      void* out = c.in_place ? send.data() : recv.data();
      if (!posted(session, make_args(c.op, send.data(), out, c.count, c.dtype), c, checks)) return;
      // Block j comes from rank j, which put it in its block `rank`.
      for (int origin = 0; origin < world; ++origin)
        expect_block(c, static_cast<std::byte*>(out) + bytes * origin, bytes, origin, rank, checks,
                     "recvbuf block " + std::to_string(origin));
      return;
    }
    case CB_OP_GATHER: {
      Bytes send(bytes);
      fill_movement(send.data(), bytes, rank, 0);
      Bytes recv = sentinel_buffer(total);
      const void* in = send.data();
      void* out = is_root ? recv.data() : nullptr;  // recvbuf matters only at the root
      if (c.in_place && is_root) {  // the root's own block already in place
        std::memcpy(recv.data() + bytes * rank, send.data(), bytes);
        in = recv.data() + bytes * rank;
      }
      if (!posted(session, make_args(c.op, in, out, c.count, c.dtype, CB_REDOP_SUM, c.root), c, checks)) return;
      if (is_root)
        for (int origin = 0; origin < world; ++origin)
          expect_block(c, recv.data() + bytes * origin, bytes, origin, 0, checks, "recvbuf block " + std::to_string(origin));
      expect_block(c, in, bytes, rank, 0, checks, "sendbuf");
      return;
    }
    case CB_OP_SCATTER: {
      Bytes send(total);
      for (int peer = 0; peer < world; ++peer) fill_movement(send.data() + bytes * peer, bytes, c.root, peer);
      Bytes recv = sentinel_buffer(bytes);
      const void* in = is_root ? send.data() : nullptr;  // sendbuf matters only at the root
      void* out = c.in_place && is_root ? send.data() + bytes * rank : recv.data();
      if (!posted(session, make_args(c.op, in, out, c.count, c.dtype, CB_REDOP_SUM, c.root), c, checks)) return;
      expect_block(c, out, bytes, c.root, rank, checks, "recvbuf");
      if (is_root)
        for (int peer = 0; peer < world; ++peer)
          expect_block(c, send.data() + bytes * peer, bytes, c.root, peer, checks, "root sendbuf block " + std::to_string(peer));
      return;
    }
    default:
      throw std::logic_error("run_movement_case: not a data-movement collective: " + c.describe());
  }
}

std::vector<cb_dtype> all_dtypes() {
  std::vector<cb_dtype> dtypes;
  for (int d = 0; d < CB_DTYPE_COUNT_V1; ++d) dtypes.push_back(static_cast<cb_dtype>(d));
  return dtypes;
}

std::vector<cb_dtype> reducible_dtypes() {
  std::vector<cb_dtype> dtypes;
  for (cb_dtype d : all_dtypes())
    if (d != CB_DTYPE_F8E4M3 && d != CB_DTYPE_F8E5M2) dtypes.push_back(d);
  return dtypes;
}

std::vector<cb_redop> supported_redops() {
  return {CB_REDOP_SUM, CB_REDOP_PROD, CB_REDOP_MIN, CB_REDOP_MAX};
}

}  // namespace commbench::test
