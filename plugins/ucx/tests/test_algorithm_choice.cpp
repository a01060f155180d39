// The choice of algorithm: names, auto's switch at the threshold, forced algorithms (valid or
// foreign to their op), and the arguments run_collective() refuses.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives/collectives.h"
#include "commbench/sdk/dtypes.hpp"
#include "memory_channel.h"
#include "test_util.h"

namespace commbench::ucx_backend {
namespace {

using test::code_of;
using test::MemoryChannel;
using test::MemoryFabric;
using test::str;

TEST(Choice, AutoSwitchesAtTheThresholds) {
  AlgorithmChoice c;  // unset: 64 KiB for allreduce and reducescatter; 4 MiB
  const size_t ring = c.ring_bytes;
  EXPECT_EQ(small_message_bytes(CB_OP_ALLREDUCE, c), 65536u);
  EXPECT_EQ(small_message_bytes(CB_OP_REDUCESCATTER, c), 65536u);
  EXPECT_EQ(small_message_bytes(CB_OP_ALLGATHER, c), 65536u);  // both of its tiers run recursive doubling
  for (int world : {2, 4, 8}) {
    EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 0, world, c), Algorithm::kRecursiveDoubling);
    EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 65535, world, c), Algorithm::kRecursiveDoubling);
    EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 65536, world, c), Algorithm::kRabenseifner);
    EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, ring - 1, world, c), Algorithm::kRabenseifner);
    EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, ring, world, c), Algorithm::kRing);
    EXPECT_EQ(chosen_algorithm(CB_OP_ALLGATHER, 65535, world, c), Algorithm::kRecursiveDoubling);
    EXPECT_EQ(chosen_algorithm(CB_OP_ALLGATHER, ring - 1, world, c), Algorithm::kRecursiveDoubling);
    EXPECT_EQ(chosen_algorithm(CB_OP_ALLGATHER, ring, world, c), Algorithm::kRing);
    EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 0, world, c), Algorithm::kPairwise);
    EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 65535, world, c), Algorithm::kPairwise);
    EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 65536, world, c), Algorithm::kRecursiveHalving);
    EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, ring, world, c), Algorithm::kRing);
  }
  // The option sets one threshold for every op.
  c.small_message_bytes = 4096;
  c.ring_bytes = 8192;
  EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 4095, 5, c), Algorithm::kPairwise);
  EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 4096, 5, c), Algorithm::kRecursiveHalving);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 4095, 5, c), Algorithm::kRecursiveDoubling);  // any world
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 4096, 5, c), Algorithm::kRabenseifner);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 8192, 5, c), Algorithm::kRing);
  EXPECT_EQ(algorithm_name(chosen_algorithm(CB_OP_ALLREDUCE, 8193, 5, c)), "ring");
  // Set to allreduce's former default (128 KiB, until 2026-11-29), 64 KiB runs recursive
  // doubling again, for every op.
  c.small_message_bytes = 131072;
  c.ring_bytes = 4 << 20;
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 65536, 4, c), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 65536, 4, c), Algorithm::kPairwise);
  // Unset, with only the ring threshold lowered below the ops' own: the small tier still runs
  // up to its threshold, the ring from there (no mid tier).
  c.small_message_bytes.reset();
  c.ring_bytes = 32768;
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 50000, 4, c), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 65536, 4, c), Algorithm::kRing);
  EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 65536, 4, c), Algorithm::kRing);
  c.small_message_bytes = 4096;
  c.ring_bytes = 8192;
  // A ring threshold at or below the small one leaves no mid tier.
  c.ring_bytes = 1024;
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 4095, 5, c), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 4096, 5, c), Algorithm::kRing);
}

TEST(Choice, AllgatherRunsTheRingOnWorldsThatAreNoPowerOfTwo) {
  AlgorithmChoice c;
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLGATHER, 100, 6, c), Algorithm::kRing);
  c.allgather = Algorithm::kRecursiveDoubling;
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLGATHER, 100, 6, c), Algorithm::kRing);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLGATHER, 1 << 20, 8, c), Algorithm::kRecursiveDoubling);
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLGATHER, 100, 1, c), Algorithm::kRecursiveDoubling);
}

TEST(Choice, ForcedWinsOverSizeAndOtherOpsHaveOneAlgorithm) {
  AlgorithmChoice c;
  c.allreduce = Algorithm::kRing;
  c.reducescatter = Algorithm::kPairwise;
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 8, 4, c), Algorithm::kRing);
  EXPECT_EQ(chosen_algorithm(CB_OP_REDUCESCATTER, 1 << 30, 4, c), Algorithm::kPairwise);
  c.allreduce = Algorithm::kRecursiveDoubling;
  EXPECT_EQ(chosen_algorithm(CB_OP_ALLREDUCE, 1 << 30, 7, c), Algorithm::kRecursiveDoubling);
  for (size_t bytes : {size_t{0}, size_t{1} << 30}) {
    EXPECT_EQ(chosen_algorithm(CB_OP_BROADCAST, bytes, 4, c), Algorithm::kBinomial);
    EXPECT_EQ(chosen_algorithm(CB_OP_REDUCE, bytes, 4, c), Algorithm::kBinomial);
    EXPECT_EQ(chosen_algorithm(CB_OP_ALLTOALL, bytes, 4, c), Algorithm::kPairwise);
    EXPECT_EQ(chosen_algorithm(CB_OP_GATHER, bytes, 4, c), Algorithm::kLinear);
    EXPECT_EQ(chosen_algorithm(CB_OP_SCATTER, bytes, 4, c), Algorithm::kLinear);
    EXPECT_EQ(chosen_algorithm(CB_OP_BARRIER, bytes, 4, c), Algorithm::kDissemination);
  }
  EXPECT_EQ(chosen_algorithm(CB_OP_SEND, 8, 4, c), Algorithm::kAuto);
}

TEST(Choice, AnAlgorithmForeignToItsOpIsRejectedWithTheValidOnes) {
  std::vector<Algorithm> all;
  for (const auto& [a, name] : kAlgorithmNames) all.push_back(a);
  for (cb_op op : {CB_OP_ALLREDUCE, CB_OP_ALLGATHER, CB_OP_REDUCESCATTER})
    for (Algorithm a : all) {
      const auto valid = valid_algorithms(op);
      const bool ok = std::find(valid.begin(), valid.end(), a) != valid.end();
      AlgorithmChoice choice;
      if (op == CB_OP_ALLREDUCE) choice.allreduce = a;
      if (op == CB_OP_ALLGATHER) choice.allgather = a;
      if (op == CB_OP_REDUCESCATTER) choice.reducescatter = a;
      SCOPED_TRACE(str(sdk::op_name(op), " ", algorithm_name(a)));
      std::string message;
      EXPECT_EQ(code_of([&] { validate_choice(choice); }, &message), ok ? CB_OK : CB_ERR_INVALID_ARGUMENT);
      EXPECT_EQ(code_of([&] { chosen_algorithm(op, 64, 4, choice); }), ok ? CB_OK : CB_ERR_INVALID_ARGUMENT);
      // run_collective refuses it too, before sending anything.
      MemoryFabric fabric(1);
      MemoryChannel ch(fabric, 0);
      Scratch s;
      std::vector<float> send(4, 1.0f), recv(4);
      ch.begin();
      EXPECT_EQ(code_of([&] {
                  run_collective(ch, op, CollectiveArgs{send.data(), recv.data(), 4, CB_DTYPE_F32, CB_REDOP_SUM, 0},
                                 choice, s);
                }),
                ok ? CB_OK : CB_ERR_INVALID_ARGUMENT);
      if (ok) continue;
      const std::string name(sdk::op_name(op));
      EXPECT_NE(message.find(str(name, "_algorithm = \"", algorithm_name(a), "\"")), std::string::npos) << message;
      const std::string list = op == CB_OP_REDUCESCATTER ? "auto, ring, pairwise, recursive_halving"
                               : op == CB_OP_ALLREDUCE   ? "auto, ring, recursive_doubling, rabenseifner"
                                                         : "auto, ring, recursive_doubling";
      EXPECT_NE(message.find(str(name, " algorithms are ", list)), std::string::npos) << message;
    }
}

TEST(Choice, OtherOpsAndBadArgumentsFail) {
  MemoryFabric fabric(2);
  MemoryChannel ch(fabric, 0);
  Scratch s;
  float x[4] = {};
  for (cb_op op : {CB_OP_SEND, CB_OP_RECV, static_cast<cb_op>(12)})
    EXPECT_EQ(code_of([&] { run_collective(ch, op, CollectiveArgs{x, x, 1}, AlgorithmChoice{}, s); }),
              CB_ERR_UNIMPLEMENTED);
  for (int root : {-1, 2})
    EXPECT_EQ(code_of([&] {
                run_collective(ch, CB_OP_BROADCAST, CollectiveArgs{x, x, 1, CB_DTYPE_F32, CB_REDOP_SUM, root},
                               AlgorithmChoice{}, s);
              }),
              CB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(code_of([&] {
              run_collective(ch, CB_OP_ALLREDUCE, CollectiveArgs{x, x, 1, static_cast<cb_dtype>(13)}, AlgorithmChoice{}, s);
            }),
            CB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(code_of([&] {
              run_collective(ch, CB_OP_ALLREDUCE, CollectiveArgs{x, x, 1, CB_DTYPE_F32, static_cast<cb_redop>(6)},
                             AlgorithmChoice{}, s);
            }),
            CB_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(ch.messages_sent(), 0u);
}

TEST(Choice, NamesRoundTrip) {
  for (const auto& [a, name] : kAlgorithmNames) EXPECT_EQ(parse_algorithm(algorithm_name(a)), a);
  EXPECT_EQ(algorithm_name(Algorithm::kRecursiveDoubling), "recursive_doubling");
  EXPECT_EQ(algorithm_name(Algorithm::kRabenseifner), "rabenseifner");
  EXPECT_EQ(algorithm_name(Algorithm::kRecursiveHalving), "recursive_halving");
  for (const char* bad : {"tree", "", "Ring", "recursive-doubling"}) EXPECT_FALSE(parse_algorithm(bad).has_value()) << bad;
}
}  // namespace
}  // namespace commbench::ucx_backend
