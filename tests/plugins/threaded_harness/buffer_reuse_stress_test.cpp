// Buffer reuse under stress, for every op of every SDK plugin built here: sizes that grow,
// shrink and cycle within one communicator, many back-to-back repeats on the same buffers, new
// input data before every op and every output checked. An op that returns while the network
// still reads its buffers (or a rank's cached state no longer matches the others') shows up
// as data from another iteration or another size.
//
// Issue 28 item 4 is what this catches: gloo's ReduceScatterHalvingDoubling::run() moves the
// reduced block inside the buffer it has just sent from without waiting for that send, so a
// send that did not fit the socket at once (the first op of a size that doubles the last one)
// delivered the tail of an overwritten block: 26 wrong elements at 2 ranks, 32 then 64 KiB. At
// 3, 5, 6 and 7 ranks the next op's data was also summed into this one's (no flow control
// between its binary blocks). plugins/gloo/src/reduce_scatter_halving_doubling.h has both fixes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "commbench/sdk/dtypes.hpp"
#include "test_support.h"

namespace commbench::test {
namespace {

// Per-rank block sizes in bytes: up by doublings (each first op of a size meets the socket
// buffers the last size left), down again, then three sizes in turn, more than the gloo
// plugin's caches of two hold, so cached objects are replaced while their peers run.
std::vector<size_t> size_sequence() {
  std::vector<size_t> bytes;
  for (size_t b = 1024; b <= 256 * 1024; b *= 2) bytes.push_back(b);
  for (size_t b = 128 * 1024; b >= 4 * 1024; b /= 2) bytes.push_back(b);
  for (int cycle = 0; cycle < 3; ++cycle)
    for (size_t b : {24 * 1024, 48 * 1024, 96 * 1024}) bytes.push_back(b);
  return bytes;
}
constexpr int kRepeats = 4;  // back-to-back ops per size, each with new data
// Fresh communicators (new sockets) per gloo test: gloo's socket buffers only grow, so each
// communicator meets each doubling once (a race there was seen in about half of them). UCX
// chooses its protocols by size alone: one communicator replays what another would.
int communicators(const std::string& plugin) { return plugin == "gloo" ? 3 : 1; }

// Element i of block `block` of rank `origin`'s input in `generation` (one per op): an integer
// below 2^20, so a sum over up to 16 ranks is exact in f32, and distinct enough across generations,
// ranks and blocks that data from any other op or block does not match.
float element(uint32_t generation, int origin, int block, size_t i) {
  uint64_t x = (uint64_t{generation} << 40) ^ (uint64_t(origin) << 32) ^ (uint64_t(block) << 24) ^ i;
  x *= 0x9E3779B97F4A7C15ull;
  x ^= x >> 29;
  return static_cast<float>((x >> 20) & 0xFFFFF);
}

constexpr float kPoison = -1.0f;  // no input is negative

// One op on one rank: where its input and output lie in the two reused allocations, what to
// write before the op and what the output must hold after it.
class StressOp {
 public:
  StressOp(cb_op op, int rank, int world) : op_(op), rank_(rank), world_(world) {}

  bool per_destination_input() const { return op_ == CB_OP_ALLTOALL || op_ == CB_OP_SCATTER; }
  size_t send_elems(size_t n) const {
    return op_ == CB_OP_REDUCESCATTER || op_ == CB_OP_ALLTOALL || op_ == CB_OP_SCATTER ? n * world_ : n;
  }
  size_t recv_elems(size_t n) const {
    return op_ == CB_OP_ALLGATHER || op_ == CB_OP_ALLTOALL || op_ == CB_OP_GATHER ? n * world_ : n;
  }

  // Poisons the output, then writes this generation's input (in place it lies inside the output).
  void prepare(float* send, float* recv, size_t n, uint32_t gen) const {
    std::fill(recv, recv + recv_elems(n), kPoison);
    const size_t blocks = per_destination_input() ? world_ : 1;
    const size_t per_block = send_elems(n) / blocks;
    for (size_t b = 0; b < blocks; ++b)
      for (size_t i = 0; i < per_block; ++i)
        send[b * per_block + i] = element(gen, rank_, static_cast<int>(b), i);
    // Reduce-scatter's input is one block of n*world elements: index i is global.
  }

  // The first wrong element of the output, as text; empty when all are right.
  std::string check(const float* recv, size_t n, uint32_t gen, int root) const {
    const bool is_root = rank_ == root;
    auto sum = [&](size_t global) {
      double s = 0;
      for (int r = 0; r < world_; ++r) s += element(gen, r, 0, global);
      return static_cast<float>(s);
    };
    auto first_wrong = [&](size_t count, auto&& want) -> std::string {
      for (size_t i = 0; i < count; ++i)
        if (recv[i] != want(i))
          return "element " + std::to_string(i) + " of " + std::to_string(count) + " is " +
                 std::to_string(recv[i]) + ", expected " + std::to_string(want(i));
      return {};
    };
    switch (op_) {
      case CB_OP_ALLREDUCE: return first_wrong(n, [&](size_t i) { return sum(i); });
      case CB_OP_REDUCE: return is_root ? first_wrong(n, [&](size_t i) { return sum(i); }) : std::string();
      case CB_OP_REDUCESCATTER: return first_wrong(n, [&](size_t i) { return sum(rank_ * n + i); });
      case CB_OP_BROADCAST: return first_wrong(n, [&](size_t i) { return element(gen, root, 0, i); });
      case CB_OP_SCATTER: return first_wrong(n, [&](size_t i) { return element(gen, root, rank_, i); });
      case CB_OP_ALLGATHER:
      case CB_OP_GATHER:
        if (op_ == CB_OP_GATHER && !is_root) return {};
        return first_wrong(n * world_, [&](size_t k) { return element(gen, static_cast<int>(k / n), 0, k % n); });
      case CB_OP_ALLTOALL:
        return first_wrong(n * world_, [&](size_t k) { return element(gen, static_cast<int>(k / n), rank_, k % n); });
      case CB_OP_SEND:  // the ring exchange below: from the previous rank
        return first_wrong(n, [&](size_t i) { return element(gen, (rank_ + world_ - 1) % world_, 0, i); });
      default: return "unexpected op";
    }
  }

  // The ABI's buffers for this op: out of place `a` and `b`; in place the layouts of cb_op_args.
  std::pair<float*, float*> buffers(float* a, float* b, size_t n, bool in_place, int root) const {
    if (!in_place) return {a, b};
    switch (op_) {
      case CB_OP_REDUCESCATTER: return {a, a + rank_ * n};
      case CB_OP_SCATTER: return {a, rank_ == root ? a + rank_ * n : b};
      case CB_OP_ALLGATHER: return {a + rank_ * n, a};
      case CB_OP_GATHER: return rank_ == root ? std::pair{a + rank_ * n, a} : std::pair{a, b};
      default: return {a, a};
    }
  }

 private:
  cb_op op_;
  int rank_, world_;
};

// Input buffer for `prepare`, in place where the input sits inside the output.
float* input_region(cb_op op, float* send, float* recv, size_t n, int rank, bool in_place, int root) {
  if (!in_place) return send;
  if (op == CB_OP_ALLGATHER || (op == CB_OP_GATHER && rank == root)) return recv + rank * n;
  return send;
}

struct StressParam {
  std::string plugin;  // "gloo" or "ucx"
  int world;
  cb_op op;                    // CB_OP_SEND: a ring of send/recv pairs
  std::string gloo_algorithm;  // allreduce only; "" = the default

  std::string name() const {
    std::string what = op == CB_OP_SEND ? "sendrecv" : std::string(sdk::op_name(op));
    if (!gloo_algorithm.empty()) what += "_" + gloo_algorithm;
    return plugin + "_world" + std::to_string(world) + "_" + what;
  }
};
void PrintTo(const StressParam& p, std::ostream* out) { *out << p.name(); }

std::string plugin_path(const std::string& name) {
#ifdef COMMBENCH_UCX_PLUGIN_PATH
  if (name == "ucx") return COMMBENCH_UCX_PLUGIN_PATH;
#endif
  return gloo_plugin_path();
}

class BufferReuseStress : public ::testing::TestWithParam<StressParam> {};

TEST_P(BufferReuseStress, EveryOutputRightAcrossSizeSequencesAndRepeats) {
  const StressParam p = GetParam();
  const std::vector<size_t> sizes = size_sequence();
  const size_t largest = *std::max_element(sizes.begin(), sizes.end()) / sizeof(float);
  Options options = test_options();
  if (!p.gloo_algorithm.empty()) options.emplace_back("allreduce_algorithm", p.gloo_algorithm);
  // The old-style gloo allreduce objects reduce in place only.
  const bool in_place_only = p.gloo_algorithm == "ring_chunked" || p.gloo_algorithm == "halving_doubling";
  const std::vector<bool> placements = p.op == CB_OP_SEND ? std::vector<bool>{false}
                                       : in_place_only    ? std::vector<bool>{true}
                                                          : std::vector<bool>{false, true};

  auto sequence_on_every_rank = [&](RankSession& s) {
    RankChecks checks(s.rank());
    const StressOp op(p.op, s.rank(), p.world);
    // Two allocations, reused by every size: as the core's buffers, the same addresses recur.
    std::vector<float> a(largest * p.world), b(largest * p.world);
    uint32_t generation = 0;
    for (const bool in_place : placements) {
      for (const size_t bytes : sizes) {
        const size_t n = bytes / sizeof(float);
        for (int repeat = 0; repeat < kRepeats; ++repeat, ++generation) {
          const int root = static_cast<int>(generation % p.world);
          auto [send, recv] = op.buffers(a.data(), b.data(), n, in_place, root);
          op.prepare(input_region(p.op, send, recv, n, s.rank(), in_place, root), recv, n, generation);
          Status status;
          if (p.op == CB_OP_SEND) {  // a ring exchange: send to the next rank, receive from the previous
            cb_op_args send_args = make_args(CB_OP_SEND, send, nullptr, n, CB_DTYPE_F32);
            send_args.peer = (s.rank() + 1) % p.world;
            cb_op_args recv_args = make_args(CB_OP_RECV, nullptr, recv, n, CB_DTYPE_F32);
            recv_args.peer = (s.rank() + p.world - 1) % p.world;
            cb_request* sent = nullptr;
            cb_request* received = nullptr;
            status = s.post(recv_args, &received);
            if (status.ok()) status = s.post(send_args, &sent);
            if (status.ok()) status = s.wait(sent);
            if (status.ok()) status = s.wait(received);
            if (sent) s.free(sent);
            if (received) s.free(received);
          } else {
            status = s.run(make_args(p.op, send, recv, n, CB_DTYPE_F32, CB_REDOP_SUM, root));
          }
          const std::string where = std::string(in_place ? "in place" : "out of place") + ", " +
                                    std::to_string(bytes) + " B, repeat " + std::to_string(repeat) +
                                    ", root " + std::to_string(root);
          if (!status.ok()) {
            checks.expect(false, where + ": " + status.message);
            checks.finish();  // a failed op leaves the ranks out of step: stop here
          }
          const std::string wrong = op.check(recv, n, generation, root);
          checks.expect(wrong.empty(), where + ": " + wrong);
        }
      }
    }
    checks.finish();
  };
  for (int communicator = 0; communicator < communicators(p.plugin); ++communicator) {
    const auto failures = run_ranks(plugin_path(p.plugin), p.world, options, sequence_on_every_rank);
    ASSERT_TRUE(failures.empty()) << "communicator " << communicator << ":\n" << join_lines(failures);
  }
}

std::vector<StressParam> stress_params() {
  const cb_op ops[] = {CB_OP_ALLREDUCE, CB_OP_REDUCESCATTER, CB_OP_ALLGATHER, CB_OP_BROADCAST,
                       CB_OP_REDUCE,    CB_OP_ALLTOALL,      CB_OP_GATHER,    CB_OP_SCATTER,
                       CB_OP_SEND};
  std::vector<std::string> plugins = {"gloo"};
#ifdef COMMBENCH_UCX_PLUGIN_PATH
  plugins.push_back("ucx");
#endif
  std::vector<StressParam> params;
  for (const std::string& plugin : plugins)
    for (int world : {2, 3, 4}) {
      for (cb_op op : ops) params.push_back({plugin, world, op, ""});
      if (plugin == "gloo")
        for (const char* algorithm : {"bcube", "ring_chunked", "halving_doubling"})
          params.push_back({plugin, world, CB_OP_ALLREDUCE, algorithm});
    }
  // gloo's halving-doubling algorithms split other worlds into binary blocks of 4+1, 4+2, 4+2+1.
  for (int world : {5, 6, 7}) {
    params.push_back({"gloo", world, CB_OP_REDUCESCATTER, ""});
    params.push_back({"gloo", world, CB_OP_ALLREDUCE, "halving_doubling"});
  }
  return params;
}

INSTANTIATE_TEST_SUITE_P(PluginsWorldsOps, BufferReuseStress, ::testing::ValuesIn(stress_params()),
                         [](const auto& info) { return info.param.name(); });

}  // namespace
}  // namespace commbench::test
