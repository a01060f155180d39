// A minimal allreduce benchmark on libgloo alone (no commbench code): the reference that
// bench/run_gloo_bench.sh compares commbench's reported time against.
//
// It times what a user's plain loop times, the way nccl-tests and OSU do — not commbench's method:
//   1 + warmup untimed ops, one gloo barrier, then t0, `iters` ring allreduces of f32 with sum
//   back to back (`for` loop, options built per call as any caller builds them), t1; per rank
//   (t1 - t0) / iters. No clock is read inside the loop.
// --placement out (default): distinct send and receive buffers; in: the receive buffer alone
// (gloo reduces in place).
// Rank 0 prints one JSON line per size, with its own time and the average over ranks
// (nccl-tests' default rank aggregation, commbench's `batch` default):
//   {"bytes":B,"world":N,"iters":I,"placement":"out","rank0_us":T0,"avg_us":A,"max_us":M}
//
// Usage (one process per rank, all with the same fresh --store directory):
//   gloo_direct --rank R --world N --store DIR --sizes 1024,4096 --warmup W --iters I
// Without --rank it starts the N ranks itself (as child processes) in a fresh subdirectory
// of --store and exits non-zero if any of them fails.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

extern char** environ;

namespace {

struct Args {
  int rank = -1;  // -1: spawn all ranks
  int world = 0;
  std::string store;
  std::vector<size_t> sizes;
  int warmup = 5;
  int iters = 20;
  bool in_place = false;
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "gloo_direct: %s\nusage: gloo_direct [--rank R] --world N --store DIR "
               "--sizes BYTES[,BYTES...] [--warmup W] [--iters I] [--placement in|out]\n",
               problem.c_str());
  std::exit(2);
}

std::vector<size_t> parse_sizes(const std::string& list) {
  std::vector<size_t> sizes;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || bytes == 0 || bytes % sizeof(float) != 0)
      usage("size '" + item + "' is not a positive multiple of 4 bytes");
    sizes.push_back(bytes);
    start = comma + 1;
  }
  return sizes;
}

int parse_int(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  const long number = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || number < 0 || number > 1000000000)
    usage(flag + " expects a non-negative integer, got '" + value + "'");
  return static_cast<int>(number);
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--rank") args.rank = parse_int(flag, value);
    else if (flag == "--world") args.world = parse_int(flag, value);
    else if (flag == "--store") args.store = value;
    else if (flag == "--sizes") args.sizes = parse_sizes(value);
    else if (flag == "--warmup") args.warmup = parse_int(flag, value);
    else if (flag == "--iters") args.iters = parse_int(flag, value);
    else if (flag == "--placement" && (value == "in" || value == "out")) args.in_place = value == "in";
    else if (flag == "--placement") usage("--placement is in or out, got '" + value + "'");
    else usage("unknown flag " + flag);
  }
  if (args.world < 1) usage("--world must be at least 1");
  if (args.rank >= args.world) usage("--rank must be below --world");
  if (args.store.empty()) usage("--store is required");
  if (args.sizes.empty()) usage("--sizes is required");
  if (args.iters < 1) usage("--iters must be at least 1");
  return args;
}

// Starts world copies of this program with --rank r in a fresh store directory; waits for all.
int spawn_ranks(int argc, char** argv, const Args& args) {
  std::filesystem::create_directories(args.store);
  std::string store = (std::filesystem::path(args.store) / "gloo-direct-XXXXXX").string();
  if (mkdtemp(store.data()) == nullptr) usage("cannot create a directory under " + args.store);
  std::vector<pid_t> children;
  for (int rank = 0; rank < args.world; ++rank) {
    std::vector<std::string> words(argv, argv + argc);
    words.insert(words.end(), {"--rank", std::to_string(rank), "--store", store});
    std::vector<char*> child_argv;
    for (std::string& w : words) child_argv.push_back(w.data());
    child_argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, child_argv.data(), environ) != 0)
      usage("cannot start rank " + std::to_string(rank));
    children.push_back(pid);
  }
  int failed = 0;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed = 1;
  }
  std::filesystem::remove_all(store);
  return failed;
}

class Bench {
 public:
  explicit Bench(const Args& args) : args_(args) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto device = gloo::transport::tcp::CreateDevice(attr);
    std::filesystem::create_directories(args.store);  // FileStore needs it to exist
    gloo::rendezvous::FileStore store(args.store);
    auto context = std::make_shared<gloo::rendezvous::Context>(args.rank, args.world);
    context->connectFullMesh(store, device);
    context_ = context;
  }

  void run_size(size_t bytes) {
    const size_t count = bytes / sizeof(float);
    // Host buffers aligned like the ones commbench allocates for plugins without mem_alloc.
    std::unique_ptr<float, decltype(&std::free)> send(
        static_cast<float*>(std::aligned_alloc(256, round_up(bytes, 256))), &std::free);
    std::unique_ptr<float, decltype(&std::free)> recv(
        static_cast<float*>(std::aligned_alloc(256, round_up(bytes, 256))), &std::free);
    for (size_t i = 0; i < count; ++i) send.get()[i] = static_cast<float>((args_.rank + i) % 3 + 1);

    float* input = args_.in_place ? nullptr : send.get();
    for (int i = 0; i < 1 + args_.warmup; ++i) allreduce(input, recv.get(), count);
    barrier();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < args_.iters; ++i) allreduce(input, recv.get(), count);
    const auto t1 = std::chrono::steady_clock::now();
    double mine = std::chrono::duration<double, std::micro>(t1 - t0).count() / args_.iters;

    std::vector<double> everyone(static_cast<size_t>(args_.world));
    gloo::AllgatherOptions gather(context_);
    gather.setInput(&mine, 1);
    gather.setOutput(everyone.data(), everyone.size());
    gather.setTag(next_tag_++);
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
  static size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

  // send == nullptr: in place (gloo reduces the output buffer alone).
  void allreduce(float* send, float* recv, size_t count) {
    gloo::AllreduceOptions opts(context_);
    opts.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
    if (send != nullptr) opts.setInput(send, count);
    opts.setOutput(recv, count);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    opts.setTag(next_tag_++);
    gloo::allreduce(opts);
  }

  void barrier() {
    gloo::BarrierOptions opts(context_);
    opts.setTag(next_tag_++);
    gloo::barrier(opts);
  }

  const Args& args_;
  std::shared_ptr<gloo::Context> context_;
  uint32_t next_tag_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  if (args.rank < 0) return spawn_ranks(argc, argv, args);
  try {
    Bench bench(args);
    for (size_t bytes : args.sizes) bench.run_size(bytes);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_direct rank %d: %s\n", args.rank, e.what());
    return 1;
  }
}
