// The memory estimate against figures worked out by hand (docs/workloads.md, "Memory").
#include <gtest/gtest.h>

#include "workload/memory_estimate.h"

namespace commbench::workload {
namespace {

// A custom model: 1000 parameters, 300 activation elements per sample.
MemoryInputs custom_model_inputs() {
  MemoryInputs in;
  in.parameters = 1000;
  in.activation_elements_per_sample = 300;
  return in;
}

TEST(MemoryEstimate, Fp32AdamByHand) {
  MemoryInputs in = custom_model_inputs();
  in.dtype_bytes = 4;
  in.optimizer = Optimizer::Adam;
  in.batch_size = 8;
  const MemoryEstimate e = estimate_memory(in);
  EXPECT_EQ(e.parameter_bytes, 4000u);
  EXPECT_EQ(e.gradient_bytes, 4000u);
  EXPECT_EQ(e.optimizer_state_bytes, 8000u);  // 2 fp32 moments
  EXPECT_EQ(e.master_weight_bytes, 0u);       // fp32 weights are their own master copy
  EXPECT_EQ(e.activation_bytes_per_sample, 1200u);
  EXPECT_EQ(e.activation_bytes, 9600u);
  EXPECT_EQ(e.total_bytes(), 4000u + 4000 + 8000 + 9600);
}

TEST(MemoryEstimate, MixedPrecisionAdamIsZerosSixteenBytesPerParameter) {
  MemoryInputs in = custom_model_inputs();
  in.dtype_bytes = 2;
  in.optimizer = Optimizer::Adam;
  const MemoryEstimate e = estimate_memory(in);
  EXPECT_EQ(e.parameter_bytes, 2000u);
  EXPECT_EQ(e.gradient_bytes, 2000u);
  EXPECT_EQ(e.master_weight_bytes, 4000u);
  EXPECT_EQ(e.optimizer_state_bytes, 8000u);
  EXPECT_EQ(e.model_state_bytes(), 16u * 1000);  // Rajbhandari et al. 2020, §3.1
  EXPECT_EQ(e.activation_bytes_per_sample, 600u);
}

TEST(MemoryEstimate, OptimizerStates) {
  MemoryInputs in = custom_model_inputs();
  in.optimizer = Optimizer::Sgd;
  EXPECT_EQ(estimate_memory(in).optimizer_state_bytes, 0u);
  in.optimizer = Optimizer::Momentum;
  EXPECT_EQ(estimate_memory(in).optimizer_state_bytes, 4000u);
  EXPECT_EQ(optimizer_from_name("momentum"), Optimizer::Momentum);
  EXPECT_FALSE(optimizer_from_name("lamb"));
}

TEST(MemoryEstimate, FsdpShardsModelStateNotActivations) {
  MemoryInputs in = custom_model_inputs();
  in.dtype_bytes = 2;
  in.sharded = true;
  in.world_size = 3;  // 1000 / 3: shards of 334, the largest is what a rank must hold
  in.batch_size = 2;
  const MemoryEstimate e = estimate_memory(in);
  EXPECT_EQ(e.parameters_per_rank, 334u);
  EXPECT_EQ(e.model_state_bytes(), 16u * 334);
  EXPECT_EQ(e.activation_bytes, 2u * 300 * 2);
  in.sharded = false;
  EXPECT_EQ(estimate_memory(in).parameters_per_rank, 1000u);
}

// Sizes past 2^64 bytes read as too big to allocate, never as a small number that wrapped.
TEST(MemoryEstimate, BytesSaturateInsteadOfWrapping) {
  MemoryInputs in;
  in.parameters = uint64_t{1} << 62;
  in.activation_elements_per_sample = uint64_t{1} << 62;
  in.batch_size = 16;
  in.dtype_bytes = 4;
  in.optimizer = Optimizer::Adam;
  const MemoryEstimate e = estimate_memory(in);
  EXPECT_EQ(e.parameter_bytes, UINT64_MAX);
  EXPECT_EQ(e.activation_bytes, UINT64_MAX);
  EXPECT_EQ(e.total_bytes(), UINT64_MAX);
}

}  // namespace
}  // namespace commbench::workload

namespace commbench::workload {
namespace {

// BERT-large (s = 512, h = 1024, a = 16, 24 blocks) in fp16 with Adam, worked out by hand:
// model state 16 × 335,141,888 bytes (ZeRO); activations per sample = embeddings s·h = 524,288
// + 24 blocks × s·h·(34 + 5·a·s/h) / 2 = 24 × 19,398,656 + pooler h = 1,024 → 466,093,056
// elements → 932,186,112 bytes; batch 4 → 3,728,744,448 bytes.
TEST(MemoryEstimate, BertLargePresetByHand) {
  const auto model = model_preset("bert_large");
  ASSERT_TRUE(model);
  MemoryInputs in;
  in.dtype_bytes = 2;
  in.optimizer = Optimizer::Adam;
  in.batch_size = 4;
  const MemoryEstimate e = estimate_memory(with_model(in, *model));
  EXPECT_EQ(e.parameter_bytes, 2ull * 335141888);
  EXPECT_EQ(e.model_state_bytes(), 16ull * 335141888);
  EXPECT_EQ(e.activation_bytes_per_sample, 932186112ull);
  EXPECT_EQ(e.activation_bytes, 3728744448ull);
  // FSDP over 4 ranks: a quarter of the model state each, the same activations.
  in.sharded = true;
  in.world_size = 4;
  const MemoryEstimate s = estimate_memory(with_model(in, *model));
  EXPECT_EQ(s.model_state_bytes(), 16ull * (335141888 / 4));
  EXPECT_EQ(s.activation_bytes, e.activation_bytes);
}

}  // namespace
}  // namespace commbench::workload
