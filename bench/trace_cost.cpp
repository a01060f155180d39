// The per-op cost of `trace = true` inside a worker, without a backend's noise: what the timed
// loop adds per iteration (two timer reads and one buffered record, as case_runner.cpp does)
// and what writing the events after the case costs per event, against the same loop with the
// recorder off. Alternating rounds; prints the medians in ns. bench/run_trace_overhead.sh
// measures the end-to-end effect on reported times.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <unistd.h>

#include "measure/host_timer.h"
#include "measure/trace_recorder.h"

using namespace commbench;

namespace {

volatile uint64_t sink;

// A stand-in for an op: a few ns of work the compiler cannot drop.
inline void fake_op(uint64_t i) { sink = sink * 6364136223846793005ull + i; }

double loop_ns(TraceRecorder& trace, int iters) {
  const HostTimer& t = HostTimer::get();
  const int64_t start = t.now_ns();
  for (int i = 0; i < iters; ++i) {
    const int64_t t0 = trace.now();
    fake_op(static_cast<uint64_t>(i));
    if (trace.on()) trace.span(TracePhase::Iteration, t0, trace.now(), i);
  }
  return static_cast<double>(t.now_ns() - start) / iters;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 11;
  const auto dir = std::filesystem::temp_directory_path() / ("trace_cost_" + std::to_string(::getpid()));
  std::vector<double> off_ns, on_ns, flush_ns;
  TraceRecorder off;
  for (int r = 0; r < rounds; ++r) {
    TraceRecorder on(dir / "rank0.json", 0, 0);
    on.set_case("allreduce 1048576 B f32 sum out_of_place", {{"op", "allreduce"}, {"bytes", 1048576}, {"dtype", "f32"},
                                                             {"placement", "out_of_place"}, {"run", "bench"}});
    on.reserve(static_cast<size_t>(iters) + 2);
    if (r % 2) {
      on_ns.push_back(loop_ns(on, iters));
      off_ns.push_back(loop_ns(off, iters));
    } else {
      off_ns.push_back(loop_ns(off, iters));
      on_ns.push_back(loop_ns(on, iters));
    }
    const HostTimer& t = HostTimer::get();
    const int64_t f0 = t.now_ns();
    on.flush();
    flush_ns.push_back(static_cast<double>(t.now_ns() - f0) / iters);
  }
  std::filesystem::remove_all(dir);
  std::printf("timer: %s\n", HostTimer::get().describe().c_str());
  std::printf("loop per iteration, trace off: %.1f ns; on: %.1f ns; added in the timed loop: %.1f ns\n",
              median(off_ns), median(on_ns), median(on_ns) - median(off_ns));
  std::printf("writing after the case: %.1f ns per event (median of %d rounds of %d)\n", median(flush_ns), rounds, iters);
  return 0;
}
