#include "measure/case_measurement.h"

#include <chrono>
#include <numeric>

#include <fmt/format.h>

#include "measure/nvtx_ranges.h"
#include "measure/trace_recorder.h"

namespace commbench {
namespace {

// This rank's samples of one round of `iters` timed iterations, laid out as the method says.
// With trace = true every iteration is also a trace event: around it for per_iteration, from the
// consecutive completion times for batch (nothing may run between back-to-back iterations; on a
// GPU, the events between enqueued collectives, placed to end when the stream was seen done);
// a graph launch is one span (the timed phase).
std::vector<double> measure_round(CaseEnvironment& env, OpExecutor& exec, int iters,
                                  const std::string& case_name) {
  TraceRecorder& trace = trace_of(env);
  switch (env.exec.method) {
    case MeasureMethod::Graph:
      return exec.run_graph(iters, remaining_ms(env), [&] { sync_start(env); });
    case MeasureMethod::Batch: {
      sync_start(env);  // once: the timed iterations then run back to back
      exec.resynchronise();
      exec.settle(remaining_ms(env));
      exec.keep_iteration_times(trace.on());
      const int64_t t0 = trace.now();
      std::vector<double> samples = exec.run_back_to_back(iters, remaining_ms(env));
      if (trace.on()) {
        // The whole iterations (not the samples: half a round trip, one message of a window,
        // nothing for a rank that does not report), end to end.
        const auto& it = exec.iteration_times();
        int64_t total = 0;
        for (double us : it.us) total += static_cast<int64_t>(us * 1e3);
        int64_t t = it.ends_at_return ? std::max(t0, trace.now() - total) : t0;
        for (size_t i = 0; i < it.us.size(); ++i) {
          const int64_t end = t + static_cast<int64_t>(it.us[i] * 1e3);
          trace.span(TracePhase::Iteration, t, end, static_cast<int>(i));
          t = end;
        }
      }
      return samples;
    }
    case MeasureMethod::PerIteration:
      break;
  }
  const bool nvtx_on = nvtx::active();
  std::vector<double> samples;
  samples.reserve(static_cast<size_t>(iters));
  const bool barrier_each = exec.barrier_each_iteration();
  if (!barrier_each) {
    sync_start(env);  // pingpong: once, its round trips run back to back
    exec.resynchronise();
  }
  for (int i = 0; i < iters; ++i) {
    if (barrier_each) sync_start(env);
    // Outside the op's own clock reads; off, one predictable branch between iterations.
    if (nvtx_on) nvtx::push(fmt::format("{} #{}", case_name, i).c_str());
    const int64_t t0 = trace.now();
    samples.push_back(exec.run_timed_once(remaining_ms(env)));
    if (trace.on()) trace.span(TracePhase::Iteration, t0, trace.now(), i);
    if (nvtx_on) nvtx::pop();
  }
  return samples;
}


// Adds this round to rank 0's series by the run's rule (measure/rank_aggregation.h), reduced in
// the bootstrap on the way, so that rank 0 receives each rank's mean and one series instead of
// world × iterations samples (800 MB at 100,000 ranks and 1,000 iterations). `round`: this rank's
// samples of this round; `own`: of every round so far, this one included.
void extend_series(CaseEnvironment& env, const SeriesRule& rule, const std::vector<double>& round,
                   const std::vector<double>& own, Measured& m) {
  Bootstrap& boot = env.bootstrap;
  const int rank = boot.rank();
  const bool root = rank == 0;
  const double mean = own.empty() ? 0.0 : std::accumulate(own.begin(), own.end(), 0.0) / static_cast<double>(own.size());
  m.times.label = rule.label;
  m.times.rank_mean_us.assign(root ? static_cast<size_t>(boot.world_size()) : 0, 0.0);
  boot.gather(&mean, sizeof(mean), m.times.rank_mean_us.data(), 0, Millis(remaining_ms(env)));
  // OneRank and RankByMean: that rank's samples in a sum with everyone else's zeros, which adds
  // nothing to them (x + 0 is x, exactly).
  const auto one_rank = [&](int who, const std::vector<double>& series) {
    std::vector<double> sent = rank == who ? series : std::vector<double>(series.size(), 0.0);
    std::vector<double> out(root ? sent.size() : 0);
    boot.reduce_to_rank0(sent.data(), sent.size(), out.data(), ReduceOp::Sum, Millis(remaining_ms(env)));
    return out;
  };
  std::vector<double> add;
  switch (rule.kind) {
    case SeriesRule::Kind::SlowestPerIteration:
    case SeriesRule::Kind::MeanPerIteration: {
      const bool slowest = rule.kind == SeriesRule::Kind::SlowestPerIteration;
      add.resize(root ? round.size() : 0);
      boot.reduce_to_rank0(round.data(), round.size(), add.data(), slowest ? ReduceOp::Max : ReduceOp::Sum,
                           Millis(remaining_ms(env)));
      if (!slowest)
        for (double& x : add) x /= static_cast<double>(boot.world_size());
      break;
    }
    case SeriesRule::Kind::OneRank:
      add = one_rank(rule.rank, round);
      break;
    case SeriesRule::Kind::RankByMean: {
      // Which rank can change from one round to the next: its whole series replaces the last.
      int32_t pick = root ? rank_by_mean(m.times.rank_mean_us, rule.smallest) : 0;
      boot.broadcast(&pick, sizeof(pick), 0, Millis(remaining_ms(env)));
      m.times.samples_us = one_rank(pick, own);
      return;
    }
  }
  m.times.samples_us.insert(m.times.samples_us.end(), add.begin(), add.end());
}

}  // namespace

Measured measure_case(CaseEnvironment& env, OpExecutor& exec, int iters, const std::string& case_name) {
  const Execution& e = env.exec;
  const int rank = env.bootstrap.rank(), world = env.bootstrap.world_size();
  const SeriesRule rule = series_rule(e.method, e.rank_aggregation, exec.reporting_rank(), world);
  Measured m;
  std::vector<double> own;  // this rank's samples of every round
  const auto began = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<double> mine = measure_round(env, exec, iters, case_name);
    settle_backend(env);  // after the clock stopped: not part of any sample
    mine.resize(static_cast<size_t>(iters), 0.0);
    own.insert(own.end(), mine.begin(), mine.end());
    extend_series(env, rule, mine, own, m);
    m.iterations += iters;
    int32_t again = 0;
    if (rank == 0) {
      m.summary = summarize(m.times.samples_us);
      m.cv_reached = e.target_cv > 0 && m.summary.cv < e.target_cv;
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      again = e.target_cv > 0 && !m.cv_reached && m.iterations + iters <= e.max_iterations &&
              spent < e.max_time_s;
    }
    if (e.target_cv <= 0) break;
    env.bootstrap.broadcast(&again, sizeof(again), 0, Millis(remaining_ms(env)));
    if (!again) break;
  }
  return m;
}

}  // namespace commbench
