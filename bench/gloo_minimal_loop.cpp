// The smallest correct gloo::allreduce timing loop, as a user would write it: connect, 5 warm-up
// allreduces, then the host clock around N more, elapsed / N. No barrier, no tags, no options
// beyond the buffers and gloo's own sum. bench/run_gloo_bench.sh runs it beside
// bench/gloo_direct to prove that the reference adds nothing of its own (issue 25 §1).
//
// Usage (one process per rank, all with the same fresh store directory):
//   gloo_minimal_loop RANK WORLD STORE_DIR BYTES ITERS in|out
// Prints this rank's elapsed / ITERS in microseconds.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: gloo_minimal_loop RANK WORLD STORE_DIR BYTES ITERS in|out\n");
    return 2;
  }
  const int rank = std::atoi(argv[1]);
  const int world = std::atoi(argv[2]);
  const size_t count = std::strtoull(argv[4], nullptr, 10) / sizeof(float);
  const int iters = std::atoi(argv[5]);
  const bool in_place = std::string(argv[6]) == "in";

  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(argv[3]);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, world);
  context->connectFullMesh(store, device);

  std::vector<float> input(count, 1.0f + rank), output(count, 0.0f);
  auto allreduce = [&] {
    gloo::AllreduceOptions opts(context);
    if (!in_place) opts.setInput(input.data(), count);
    opts.setOutput(output.data(), count);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(opts);
  };
  for (int i = 0; i < 5; ++i) allreduce();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) allreduce();
  const auto t1 = std::chrono::steady_clock::now();
  std::printf("%.3f\n", std::chrono::duration<double, std::micro>(t1 - t0).count() / iters);
  return 0;
}
