// `commbench quick`: an experiment from nccl-tests-style flags, without a file (issue 14 §4).
// The flags become a TOML experiment, which goes through the same parser and validation as a
// file; an error is reported against the flag that wrote the offending line.
#pragma once

#include <string>
#include <vector>

namespace commbench {

// The generated experiment: TOML text plus, per line (1-based; [0] unused), the flag that wrote
// it ("-n 0"), "" for lines no flag wrote.
struct QuickExperiment {
  std::string toml;
  std::vector<std::string> origin;
  std::vector<std::string> errors;  // flags the file cannot express ("-i -8: ..."), none when empty
  std::vector<std::string> notes;   // flags given but not used, and why ("-i 1K: not used: ...")
};

struct QuickFlags {
  std::vector<std::string> ops;       // as given: allreduce, all_reduce, ...
  std::vector<std::string> backends;  // --backend gloo,ucx
  std::string ranks = "2";            // --ranks 2,4
  std::string min_bytes = "32M", max_bytes = "32M";  // -b / -e, nccl-tests' defaults
  std::string factor, step;           // -f / -i (nccl-tests: -i 0 = use the factor)
  std::string iters, warmup, check, redop, dtype, root, timeout, memory, placement;
  std::string average, graph, timing;  // -a (nccl-tests' 0..3), -G (graph launches), --timing
  std::string output_dir = "results";
};

// nccl-tests spellings accepted beside commbench's: all_reduce -> allreduce, float -> f32,
// 1G -> 1GiB (nccl-tests' K/M/G are powers of 1024). Unknown spellings pass through unchanged
// for the parser to reject with its suggestion.
std::string quick_op_name(const std::string& op);
std::string quick_dtype_name(const std::string& dtype);
std::string quick_size(const std::string& size);

QuickExperiment quick_experiment(const QuickFlags& flags);

int cmd_quick(const std::vector<std::string>& args);

}  // namespace commbench
