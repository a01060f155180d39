// CPU compute for the data-parallel workload: 64x64 single-precision matrix products on a
// per-rank buffer (an SGEMM-shaped FMA loop, 2·64³ FLOPs per block), its rate measured at start.
#pragma once

#include <vector>

#include "workload/step_compute.h"

namespace commbench::workload {

class CpuCompute final : public StepCompute {
 public:
  // How long run(seconds) lasts. FixedWork: the blocks `seconds` is worth at the calibrated rate
  // (compute = "flops": a layer is a fixed amount of work, slower on a loaded machine).
  // Deadline: blocks until `seconds` of wall time have passed (compute = "time": the user gave
  // the step's compute time, and overlap is measured against that time, not against load). A
  // block cannot be cut short: what one call overran is taken off the next calls of the step,
  // so a step of many layers (ResNet-50: 108 calls) lasts its compute time, not a block per
  // layer more.
  enum class Pace { FixedWork, Deadline };
  // Measures the rate over about `calibration_s` seconds.
  explicit CpuCompute(Pace pace, double calibration_s = 0.2);
  double flops_per_s() const override { return rate_; }
  void run(double seconds, const std::function<void()>& progress) override;
  void begin_step() override { overrun_s_ = 0; }
  std::string engine() const override { return "cpu"; }
  std::string describe() const override;
  static constexpr int kN = 64;
  static constexpr double kBlockFlops = 2.0 * kN * kN * kN;

 private:
  void block();
  std::vector<float> a_, b_, c_;
  Pace pace_;
  double rate_ = 0;
  double overrun_s_ = 0;  // Deadline: how far this step's calls so far ran past their shares
};

}  // namespace commbench::workload
