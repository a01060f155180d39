// Shared bits of the gloo plugin tests.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "op_cases.h"
#include "plugin_session.h"

namespace commbench::test {

using Options = std::vector<std::pair<std::string, std::string>>;

// Short op timeout: a broken op fails the test in seconds rather than hanging for gloo's 5 min.
inline Options test_options(Options extra = {}) {
  extra.emplace_back("timeout_ms", "20000");
  return extra;
}

inline const std::string& gloo_plugin_path() {
  static const std::string path = COMMBENCH_GLOO_PLUGIN_PATH;
  return path;
}

inline std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return out;
}

// Runs every case on every rank of a world and returns all failures.
inline std::vector<std::string> run_cases(int world_size, const Options& options,
                                          const std::vector<OpCase>& cases) {
  return run_ranks(gloo_plugin_path(), world_size, options, [&](RankSession& session) {
    RankChecks checks(session.rank());
    for (const OpCase& c : cases) {
      if (c.op == CB_OP_ALLREDUCE || c.op == CB_OP_REDUCE || c.op == CB_OP_REDUCESCATTER)
        run_reduction_case(session, c, checks);
      else
        run_movement_case(session, c, checks);
    }
    checks.finish();
  });
}

inline const std::vector<size_t>& test_counts() {
  static const std::vector<size_t> counts = {1, 7, 1000};
  return counts;
}

inline std::vector<OpCase> reduction_cases(cb_op op, const std::vector<int>& roots,
                                           const std::vector<bool>& placements = {false, true}) {
  std::vector<OpCase> cases;
  for (cb_dtype dtype : reducible_dtypes())
    for (cb_redop redop : supported_redops())
      for (bool in_place : placements)
        for (size_t count : test_counts())
          for (int root : roots) cases.push_back(OpCase{op, dtype, redop, in_place, count, root});
  return cases;
}

inline std::vector<OpCase> movement_cases(cb_op op, const std::vector<int>& roots) {
  std::vector<OpCase> cases;
  for (cb_dtype dtype : all_dtypes())
    for (bool in_place : {false, true})
      for (size_t count : test_counts())
        for (int root : roots) cases.push_back(OpCase{op, dtype, CB_REDOP_SUM, in_place, count, root});
  return cases;
}

}  // namespace commbench::test
