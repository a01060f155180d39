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

// Zero-filled floats on whole pages of their own: the kind of host buffer commbench allocates
// (aligned_alloc of whole pages), so that both sides of the comparison reduce in the same kind.
class PageBuffer {
 public:
  explicit PageBuffer(size_t bytes) : bytes_((bytes + 4095) / 4096 * 4096 + (bytes == 0 ? 4096 : 0)) {
    ptr_ = static_cast<float*>(std::aligned_alloc(4096, bytes_));
    if (ptr_ == nullptr) throw std::runtime_error("cannot allocate " + std::to_string(bytes) + " bytes");
    std::memset(ptr_, 0, bytes_);
  }
  ~PageBuffer() { std::free(ptr_); }
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  float* data() { return ptr_; }

 private:
  size_t bytes_;
  float* ptr_;
};

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
    // Page-aligned, as commbench allocates its host buffers (and OSU its own), so that where the
    // buffers sit is not one more difference between the two sides (docs/performance.md, "The
    // reference's own reduction").
    PageBuffer send(bytes), recv(bytes);
    for (size_t i = 0; i < count; ++i) send.data()[i] = static_cast<float>((args_.rank + i) % 3 + 1);

    float* input = args_.in_place ? nullptr : send.data();
    for (int i = 0; i < args_.warmup; ++i) allreduce(input, recv.data(), count);
    gloo::BarrierOptions barrier(context_);
    gloo::barrier(barrier);
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < args_.iters; ++i) allreduce(input, recv.data(), count);
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
  // send == nullptr: in place (gloo reduces the output buffer alone).
  void allreduce(float* send, float* recv, size_t count) {
    gloo::AllreduceOptions opts(context_);
    if (send != nullptr) opts.setInput(send, count);
    opts.setOutput(recv, count);
    opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(opts);
  }

  const Args& args_;
  std::shared_ptr<gloo::Context> context_;
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
