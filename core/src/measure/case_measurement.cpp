#include "measure/case_measurement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <type_traits>

#include <fmt/format.h>

#include "measure/nvtx_ranges.h"
#include "measure/trace_recorder.h"

namespace commbench {
namespace {

// This rank's samples of one round of `iters` timed iterations, laid out as the method says.
// With trace = true every iteration is also a trace event: around it for per_iteration, from the
// consecutive completion times for batch (nothing may run between back-to-back iterations; on a
// GPU, the events between enqueued collectives, placed to end when the stream was seen done);
// a graph launch is one span (the timed phase). `first` numbers this round's iterations after
// the earlier rounds' (min_time, target_cv), so that a case's spans and NVTX ranges are one series.
std::vector<double> measure_round(CaseEnvironment& env, OpExecutor& exec, int iters, int first,
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
          trace.span(TracePhase::Iteration, t, end, first + static_cast<int>(i));
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
    if (nvtx_on) nvtx::push(fmt::format("{} #{}", case_name, first + i).c_str());
    const int64_t t0 = trace.now();
    samples.push_back(exec.run_timed_once(remaining_ms(env)));
    if (trace.on()) trace.span(TracePhase::Iteration, t0, trace.now(), first + i);
    if (nvtx_on) nvtx::pop();
  }
  return samples;
}


// What each rank tells rank 0 after each round: its mean over every round so far (the record's
// rank_mean_us) and, when the run picks a rank by its mean under a CV target, its own series' CV,
// so that rank 0 can decide on another round without fetching that rank's whole series each time.
struct RankStats {
  double mean = 0;
  double cv = 0;
};
static_assert(std::is_trivially_copyable_v<RankStats>, "gathered as raw bytes");

// `series` of rank `who` at rank 0, as a sum with every other rank's zeros, which adds nothing to
// it (x + 0 is x, exactly): the tree carries one series' worth, not world × its length.
std::vector<double> series_of(Bootstrap& boot, int who, const std::vector<double>& series, int32_t timeout_ms) {
  std::vector<double> sent = boot.rank() == who ? series : std::vector<double>(series.size(), 0.0);
  std::vector<double> out(boot.rank() == 0 ? sent.size() : 0);
  boot.reduce_to_rank0(sent.data(), sent.size(), out.data(), ReduceOp::Sum, Millis(timeout_ms));
  return out;
}

// Adds this round (`round`, this rank's samples) to rank 0's series by the run's rule (measure/
// rank_aggregation.h), reduced in the bootstrap on the way, so that rank 0 receives one series
// instead of world × iterations samples (800 MB at 100,000 ranks and 1,000 iterations).
// RankByMean is not made per round: which rank it takes can change until the last round.
void append_round(CaseEnvironment& env, const SeriesRule& rule, const std::vector<double>& round, Measured& m) {
  Bootstrap& boot = env.bootstrap;
  std::vector<double> add;
  if (rule.kind == SeriesRule::Kind::OneRank) {
    add = series_of(boot, rule.rank, round, remaining_ms(env));
  } else {
    const bool slowest = rule.kind == SeriesRule::Kind::SlowestPerIteration;
    add.resize(boot.rank() == 0 ? round.size() : 0);
    boot.reduce_to_rank0(round.data(), round.size(), add.data(), slowest ? ReduceOp::Max : ReduceOp::Sum,
                         Millis(remaining_ms(env)));
    if (!slowest)
      for (double& x : add) x /= static_cast<double>(boot.world_size());
  }
  m.times.samples_us.insert(m.times.samples_us.end(), add.begin(), add.end());
}

}  // namespace

Measured measure_case(CaseEnvironment& env, OpExecutor& exec, int iters, const std::string& case_name) {
  const Execution& e = env.exec;
  Bootstrap& boot = env.bootstrap;
  const int rank = boot.rank(), world = boot.world_size();
  const SeriesRule rule = series_rule(e.method, e.rank_aggregation, exec.reporting_rank(), world);
  const bool by_mean = rule.kind == SeriesRule::Kind::RankByMean;
  Measured m;
  m.times.label = rule.label;
  std::vector<double> own;  // this rank's samples of every round
  const auto began = std::chrono::steady_clock::now();
  // min_time without target_cv: the first round's size came from the warm-up's time per op,
  // which overestimates a warm op (seen: 1.4 ms estimated, 0.11 ms measured, 13x short). So the
  // timed time itself decides: more rounds until it reaches min_time or max_iterations.
  const bool fill_min_time = e.min_time_s > 0 && e.target_cv <= 0;
  for (;;) {
    std::vector<double> mine = measure_round(env, exec, iters, static_cast<int>(own.size()), case_name);
    settle_backend(env);  // after the clock stopped: not part of any sample
    mine.resize(static_cast<size_t>(iters), 0.0);
    own.insert(own.end(), mine.begin(), mine.end());
    RankStats stats;
    if (!own.empty()) stats.mean = std::accumulate(own.begin(), own.end(), 0.0) / static_cast<double>(own.size());
    if (by_mean && e.target_cv > 0) stats.cv = summarize(own).cv;
    std::vector<RankStats> everyone(rank == 0 ? static_cast<size_t>(world) : 0);
    boot.gather(&stats, sizeof(stats), everyone.data(), 0, Millis(remaining_ms(env)));
    if (!by_mean) append_round(env, rule, mine, m);
    m.iterations += iters;
    int32_t again = 0;  // the next round's iterations; 0: done
    if (rank == 0) {
      m.times.rank_mean_us.clear();
      for (const RankStats& s : everyone) m.times.rank_mean_us.push_back(s.mean);
      double cv = 0;
      if (by_mean) {
        cv = everyone[static_cast<size_t>(rank_by_mean(m.times.rank_mean_us, rule.smallest))].cv;
      } else {
        m.summary = summarize(m.times.samples_us);
        cv = m.summary.cv;
      }
      m.cv_reached = e.target_cv > 0 && cv < e.target_cv;
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
      if (e.target_cv > 0) {
        again = !m.cv_reached && m.iterations + iters <= e.max_iterations && spent < e.max_time_s ? iters : 0;
      } else if (fill_min_time) {
        // The busiest rank's timed time so far (every rank ran the same iterations): rank 0's own
        // samples are zeros when it is not one of a pattern's `peers`.
        double busiest_us = 0;
        for (const RankStats& r : everyone) busiest_us = std::max(busiest_us, r.mean);
        const double timed_s = busiest_us * static_cast<double>(own.size()) * 1e-6;
        const double per_op_s = busiest_us * 1e-6;
        const int64_t room = static_cast<int64_t>(e.max_iterations) - m.iterations;
        if (timed_s < e.min_time_s && room > 0 && per_op_s > 0)
          again = static_cast<int32_t>(std::clamp<double>(std::ceil((e.min_time_s - timed_s) / per_op_s), 1.0,
                                                          static_cast<double>(room)));
      }
    }
    if (e.target_cv <= 0 && !fill_min_time) break;
    boot.broadcast(&again, sizeof(again), 0, Millis(remaining_ms(env)));
    if (again <= 0) break;
    iters = again;
  }
  if (by_mean) {  // once: the chosen rank's series of every round
    int32_t pick = rank == 0 ? rank_by_mean(m.times.rank_mean_us, rule.smallest) : 0;
    boot.broadcast(&pick, sizeof(pick), 0, Millis(remaining_ms(env)));
    m.times.samples_us = series_of(boot, pick, own, remaining_ms(env));
    if (rank == 0) m.summary = summarize(m.times.samples_us);  // its CV is the one rank 0 decided on
  }
  return m;
}

}  // namespace commbench
