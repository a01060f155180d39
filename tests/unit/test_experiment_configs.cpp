// Every shipped experiment file must validate cleanly: no errors and no warnings.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "experiment/experiment.h"

namespace commbench {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> shipped_experiments() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(COMMBENCH_SOURCE_DIR) / "configs"))
    if (e.path().extension() == ".toml") files.push_back(e.path());
  files.push_back(fs::path(COMMBENCH_TEST_DATA_DIR) / "experiments" / "seed001_reduced.toml");
  return files;
}

TEST(ShippedConfigs, EveryFileValidatesWithoutDiagnostics) {
  const auto files = shipped_experiments();
  ASSERT_GE(files.size(), 5u) << "configs/ should hold quickstart, seed000, seed001, p2p";
  for (const auto& f : files) {
    const ParseResult r = parse_experiment_file(f.string());
    EXPECT_TRUE(r.experiment.has_value()) << f;
    for (const auto& d : r.diagnostics) ADD_FAILURE() << d.format();
  }
}

ParseResult parse_config(const char* name) {
  return parse_experiment_file((fs::path(COMMBENCH_SOURCE_DIR) / "configs" / name).string());
}

TEST(ShippedConfigs, QuickstartIsGlooOnFourRanks) {
  const auto r = parse_config("quickstart.toml");
  ASSERT_TRUE(r.experiment);
  ASSERT_EQ(r.experiment->runs.size(), 1u);
  const RunSpec& run = r.experiment->runs[0];
  EXPECT_EQ(run.backends, std::vector<std::string>{"gloo"});
  EXPECT_EQ(run.world_sizes, std::vector<int>{4});
  EXPECT_EQ(run.ops, (std::vector<OpKind>{OpKind::Allreduce, OpKind::Allgather, OpKind::Reducescatter}));
  EXPECT_TRUE(run.check);
}

// Seed 000: "1M elements" means 1,048,576 elements of f32.
TEST(ShippedConfigs, Seed000UsesBinaryElementCounts) {
  const auto r = parse_config("seed000_collectives.toml");
  ASSERT_TRUE(r.experiment);
  const RunSpec& run = r.experiment->runs[0];
  ASSERT_EQ(run.sizes.size(), 3u);
  EXPECT_TRUE(run.sizes[0].elements);
  EXPECT_EQ(run.sizes[0].bytes(4), 4u << 20);
  EXPECT_EQ(run.sizes[2].value, 16u << 20);
  EXPECT_EQ(run.world_sizes, std::vector<int>{4});
}

// Seed 001: decimal megabytes, as the seed writes them, at 2, 4 and 6 processes.
TEST(ShippedConfigs, Seed001IsTheDecimalSweep) {
  const auto r = parse_config("seed001_allreduce_sweep.toml");
  ASSERT_TRUE(r.experiment);
  const RunSpec& run = r.experiment->runs[0];
  std::vector<uint64_t> bytes;
  for (const auto& s : run.sizes) bytes.push_back(s.bytes(4));
  EXPECT_EQ(bytes, (std::vector<uint64_t>{1000000, 10000000, 100000000, 1000000000}));
  EXPECT_EQ(run.world_sizes, (std::vector<int>{2, 4, 6}));
  EXPECT_EQ(run.warmup, 5);
  EXPECT_EQ(run.ops, std::vector<OpKind>{OpKind::Allreduce});
}

// Seed 002: ~400 MB allreduce in place on 2 GPUs, Gloo (staged) and NCCL side by side.
TEST(ShippedConfigs, Seed002IsGlooAgainstNcclOnDeviceMemory) {
  const auto r = parse_config("seed002_gloo_vs_nccl.toml");
  ASSERT_TRUE(r.experiment);
  const RunSpec& run = r.experiment->runs[0];
  EXPECT_EQ(run.backends, (std::vector<std::string>{"gloo", "nccl"}));
  EXPECT_EQ(run.memory, CB_MEM_CUDA);
  EXPECT_EQ(run.world_sizes, std::vector<int>{2});
  ASSERT_EQ(run.sizes.size(), 1u);
  EXPECT_EQ(run.sizes[0].bytes(4), 400000000u);
  EXPECT_EQ(run.placements, std::vector<Placement>{Placement::InPlace});
}

// Seeds 000 and 001 carry a GPU run next to the CPU one.
TEST(ShippedConfigs, Seed000And001HaveTheirGpuRuns) {
  for (const char* name : {"seed000_collectives.toml", "seed001_allreduce_sweep.toml"}) {
    const auto r = parse_config(name);
    ASSERT_TRUE(r.experiment) << name;
    ASSERT_EQ(r.experiment->runs.size(), 2u) << name;
    EXPECT_EQ(r.experiment->runs[0].memory, CB_MEM_HOST) << name;
    EXPECT_EQ(r.experiment->runs[1].memory, CB_MEM_CUDA) << name;
    EXPECT_EQ(r.experiment->runs[1].backends[0], "nccl") << name;
  }
}

TEST(ShippedConfigs, P2pPatternsCoverOneByteToOneMebibyte) {
  const auto r = parse_config("p2p_patterns.toml");
  ASSERT_TRUE(r.experiment);
  const RunSpec& run = r.experiment->runs[0];
  ASSERT_EQ(run.sizes.size(), 21u);  // 2^0 .. 2^20
  EXPECT_EQ(run.sizes.front().value, 1u);
  EXPECT_EQ(run.sizes.back().value, 1u << 20);
  EXPECT_EQ(run.world_sizes, std::vector<int>{2});
}

// The complete examples in docs/configuration.md (```toml blocks that start with `name =`) must
// be valid: a doc that shows a broken file teaches the wrong thing.
TEST(DocumentedExamples, CompleteExamplesValidate) {
  std::ifstream in(fs::path(COMMBENCH_SOURCE_DIR) / "docs" / "configuration.md");
  ASSERT_TRUE(in) << "docs/configuration.md is missing";
  std::vector<std::string> blocks;
  std::string line, block;
  bool inside = false;
  while (std::getline(in, line)) {
    if (!inside && line == "```toml") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      if (block.rfind("name =", 0) == 0) blocks.push_back(block);
    } else if (inside) {
      block += line + "\n";
    }
  }
  ASSERT_GE(blocks.size(), 2u);
  for (size_t i = 0; i < blocks.size(); ++i) {
    const ParseResult r = parse_experiment_string(blocks[i], "configuration.md example " + std::to_string(i));
    EXPECT_TRUE(r.experiment.has_value()) << blocks[i];
    for (const auto& d : r.diagnostics) ADD_FAILURE() << d.format();
  }
}

}  // namespace
}  // namespace commbench
