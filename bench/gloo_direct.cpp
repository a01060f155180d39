// The reference that bench/run_gloo_bench.sh compares commbench's Gloo allreduce against: the
// plainest correct libgloo loop (no commbench code), with what a benchmark needs around it.
//
// Timed, per size, as a user's loop: 5 untimed allreduces, one gloo barrier (as nccl-tests and
// OSU start their timed loops: without it each rank's clock would also count how long it waited
// for the others in the first op, up to 1/iters of the result), then the host clock around
// `iters` ring allreduces of f32 with gloo's own sum (built at -O3: bench/CMakeLists.txt) on
// page-aligned buffers as commbench's, back to back, options built per call as any
// caller builds them, no tag (every call on gloo's default), no clock read inside the loop; per
// rank (t1 - t0) / iters. bench/gloo_minimal_loop.cpp is the bare loop (no barrier), and
// run_gloo_bench.sh shows the two agree at 1 KiB (issue 25 §1 timed an earlier version, with a
// new tag per call and 1 + 5 warm-ups, at 1,080 us against ~270-430 us for a plain loop; under
// SCHED_FIFO that version, this one and the minimal loop all take ~122-125 us: the load did it,
// see docs/performance.md).
// --placement out (default): distinct send and receive buffers; in: the receive buffer alone
// (gloo reduces in place).
// Rank 0 prints one JSON line per size, with its own time and the average over ranks
// (nccl-tests' default rank aggregation, commbench's `batch` default), gathered after the loop:
//   {"bytes":B,"world":N,"iters":I,"placement":"out","rank0_us":T0,"avg_us":A,"max_us":M}
//
// Usage (one process per rank, all with the same fresh --store directory):
//   gloo_direct --rank R --world N --store DIR --sizes 1024,4096 --warmup W --iters I
// Without --rank it starts the N ranks itself (as child processes) in a fresh subdirectory
// of --store and exits non-zero if any of them fails.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>

#include "gloo_bench_common.h"

namespace {

using gloo_bench::PageBuffer;

struct Args : gloo_bench::CommonArgs {
  int iters = 20;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "gloo_direct: %s\nusage: gloo_direct [--rank R] --world N --store DIR "
               "--sizes BYTES[,BYTES...] [--warmup W] [--iters I] [--placement in|out]\n",
               problem.c_str());
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args args;  // the callback sets this bench's own flags; the assignment sets the shared ones only
  static_cast<gloo_bench::CommonArgs&>(args) =
      gloo_bench::parse_flags(argc, argv, usage, [&](const std::string& flag, const std::string& value) {
        if (flag != "--iters") return false;
        args.iters = gloo_bench::parse_int(flag, value);
        return true;
      });
  if (args.iters < 1) usage("--iters must be at least 1");
  return args;
}

class Bench {
 public:
  explicit Bench(const Args& args)
      : args_(args), context_(gloo_bench::connect_loopback(args.rank, args.world, args.store)) {}

  void run_size(size_t bytes) {
    const size_t count = bytes / sizeof(float);
    // Page-aligned, as commbench allocates its host buffers (and OSU its own), so that where the
    // buffers sit is not one more difference between the two sides (docs/performance.md, "The
    // reference's own reduction").
    PageBuffer send(bytes), recv(bytes);
    for (size_t i = 0; i < count; ++i) send.data()[i] = static_cast<float>((args_.rank + i) % 3 + 1);

    float* input = args_.in_place ? nullptr : send.data();
    for (int i = 0; i < args_.warmup; ++i) gloo_bench::reference_allreduce(context_, input, recv.data(), count);
    gloo::BarrierOptions barrier(context_);
    gloo::barrier(barrier);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < args_.iters; ++i) gloo_bench::reference_allreduce(context_, input, recv.data(), count);
    const auto t1 = std::chrono::steady_clock::now();
    double mine = std::chrono::duration<double, std::micro>(t1 - t0).count() / args_.iters;

    std::vector<double> everyone(static_cast<size_t>(args_.world));
    gloo::AllgatherOptions gather(context_);
    gather.setInput(&mine, 1);
    gather.setOutput(everyone.data(), everyone.size());
    gloo::allgather(gather);
    if (args_.rank != 0) return;
    const double avg = std::accumulate(everyone.begin(), everyone.end(), 0.0) / everyone.size();
    const double max = *std::max_element(everyone.begin(), everyone.end());
    std::printf("{\"bytes\":%zu,\"world\":%d,\"iters\":%d,\"placement\":\"%s\",\"rank0_us\":%.3f,"
                "\"avg_us\":%.3f,\"max_us\":%.3f}\n",
                bytes, args_.world, args_.iters, args_.in_place ? "in" : "out", mine, avg, max);
    std::fflush(stdout);
  }

 private:
  const Args& args_;
  std::shared_ptr<gloo::Context> context_;
};

}  // namespace

int main(int argc, char** argv) {
  return gloo_bench::run_main<Bench>(parse_args(argc, argv), argc, argv, "gloo_direct");
}
