// One op case run on one rank and checked element by element: inputs whose exact result does
// not depend on reduction order (small integers), outputs compared exactly, and the buffers an
// op must leave alone (inputs out of place, a non-root's buffers) checked unchanged.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "commbench/backend.h"
#include "plugin_session.h"

namespace commbench::test {

struct OpCase {
  cb_op op = CB_OP_ALLREDUCE;
  cb_dtype dtype = CB_DTYPE_F32;
  cb_redop redop = CB_REDOP_SUM;
  bool in_place = false;
  size_t count = 1;
  int root = 0;

  std::string describe() const;
};

// Collects a rank's mismatches instead of stopping at the first, so the rank keeps taking part
// in the collectives the other ranks are waiting in.
class RankChecks {
 public:
  explicit RankChecks(int rank) : rank_(rank) {}
  void expect(bool condition, const std::string& what);
  // Throws std::runtime_error listing the first mismatches if there were any.
  void finish() const;

 private:
  static constexpr size_t kMaxKept = 8;
  int rank_;
  size_t failed_ = 0;
  std::vector<std::string> kept_;
};

// Runs one case (posting the op exactly once on this rank) and records what is wrong.
void run_reduction_case(RankSession& session, const OpCase& c, RankChecks& checks);
void run_movement_case(RankSession& session, const OpCase& c, RankChecks& checks);

// Every ABI dtype, and the ones gloo reduces (all but fp8).
std::vector<cb_dtype> all_dtypes();
std::vector<cb_dtype> reducible_dtypes();
std::vector<cb_redop> supported_redops();  // sum, prod, min, max

}  // namespace commbench::test
