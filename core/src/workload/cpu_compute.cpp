#include "workload/cpu_compute.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

namespace commbench::workload {
namespace {

double cpu_compute_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

CpuCompute::CpuCompute(Pace pace, double calibration_s)
    : a_(kN * kN, 1.0f / kN), b_(kN * kN, 0.5f), c_(kN * kN, 0.0f), pace_(pace) {
  block();  // touch the buffers once
  // Blocks until the calibration time is spent; the best of a few rounds, so that a preempted
  // round does not make every later layer too short.
  double best = 0;
  for (int round = 0; round < 4; ++round) {
    const double start = cpu_compute_now_s();
    int blocks = 0;
    while (cpu_compute_now_s() - start < calibration_s / 4) {
      block();
      ++blocks;
    }
    best = std::max(best, blocks * kBlockFlops / (cpu_compute_now_s() - start));
  }
  rate_ = best;
}

void CpuCompute::block() {
  // C = A·B + C, i-k-j order so the inner loop is a contiguous multiply-add the compiler vectorises.
  float* c = c_.data();
  const float* a = a_.data();
  const float* b = b_.data();
  for (int i = 0; i < kN; ++i)
    for (int k = 0; k < kN; ++k) {
      const float aik = a[i * kN + k];
      for (int j = 0; j < kN; ++j) c[i * kN + j] += aik * b[k * kN + j];
    }
  // Keep the values bounded (and the work observable) without a branch in the loop.
  if (!(c[0] < 1e30f)) std::fill(c_.begin(), c_.end(), 0.0f);
}

void CpuCompute::run(double seconds, const std::function<void()>& progress) {
  if (!(seconds > 0)) return;
  if (pace_ == Pace::Deadline) {
    const double budget = seconds - overrun_s_;
    if (budget <= 0) {  // earlier layers of the step already used this one's share
      overrun_s_ = -budget;
      return;
    }
    const double end = cpu_compute_now_s() + budget;
    for (long i = 0; cpu_compute_now_s() < end; ++i) {
      block();
      if (progress && (i & 7) == 7) progress();
    }
    overrun_s_ = std::max(0.0, cpu_compute_now_s() - end);
    return;
  }
  // The calibrated number of blocks: the compute is a fixed amount of work, as a layer is; the
  // time it takes under load is what the compute-only steps measure.
  const auto blocks = static_cast<long>(std::llround(seconds * rate_ / kBlockFlops));
  for (long i = 0; i < std::max(blocks, 1L); ++i) {
    block();
    if (progress && (i & 7) == 7) progress();
  }
}

std::string CpuCompute::describe() const {
  return fmt::format("CPU {}x{} f32 FMA blocks, {:.2f} GFLOP/s measured", kN, kN, rate_ / 1e9);
}

}  // namespace commbench::workload
