// What the Gloo reference benches share (bench/gloo_direct.cpp, bench/gloo_interleaved.cpp): the
// kind of host buffer commbench allocates, argument parsing, a loopback context and starting one
// process per rank. Header-only: each bench is one translation unit.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cstdio>

#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

extern char** environ;

namespace gloo_bench {

// Zero-filled floats on whole pages of their own: the kind of host buffer commbench allocates
// (aligned_alloc of whole pages), so that both sides of a comparison reduce in the same kind.
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

// "1024,4096": positive multiples of 4 bytes; throws std::invalid_argument naming the bad item.
inline std::vector<size_t> parse_sizes(const std::string& list) {
  std::vector<size_t> sizes;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    char* end = nullptr;
    const unsigned long long bytes = std::strtoull(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || bytes == 0 || bytes % sizeof(float) != 0)
      throw std::invalid_argument("size '" + item + "' is not a positive multiple of 4 bytes");
    sizes.push_back(bytes);
    start = comma + 1;
  }
  return sizes;
}

// 0..1e9; throws std::invalid_argument naming the flag.
inline int parse_int(const std::string& flag, const std::string& value) {
  char* end = nullptr;
  const long number = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || number < 0 || number > 1000000000)
    throw std::invalid_argument(flag + " expects a non-negative integer, got '" + value + "'");
  return static_cast<int>(number);
}

// The flags both benches take, parsed in one loop with the caller's own: `more(flag, value)`
// sets what it knows and returns false for an unknown flag. Every problem goes to `usage`, which
// prints it and exits.
struct CommonArgs {
  int rank = -1;  // -1: spawn all ranks
  int world = 0;
  std::string store;
  std::vector<size_t> sizes;
  int warmup = 5;
  bool in_place = false;
};

template <class More>
CommonArgs parse_flags(int argc, char** argv, void (*usage)(const std::string&), More more) {
  CommonArgs c;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) usage("missing value after " + flag);
    const std::string value = argv[++i];
    try {
      if (flag == "--rank") c.rank = parse_int(flag, value);
      else if (flag == "--world") c.world = parse_int(flag, value);
      else if (flag == "--store") c.store = value;
      else if (flag == "--sizes") c.sizes = parse_sizes(value);
      else if (flag == "--warmup") c.warmup = parse_int(flag, value);
      else if (flag == "--placement" && (value == "in" || value == "out")) c.in_place = value == "in";
      else if (flag == "--placement") usage("--placement is in or out, got '" + value + "'");
      else if (!more(flag, value)) usage("unknown flag " + flag);
    } catch (const std::invalid_argument& e) {
      usage(e.what());
    }
  }
  if (c.world < 1) usage("--world must be at least 1");
  if (c.rank >= c.world) usage("--rank must be below --world");
  if (c.store.empty()) usage("--store is required");
  if (c.sizes.empty()) usage("--sizes is required");
  return c;
}

// A full mesh over loopback TCP (the Gloo plugin's default address), met through files in `store`.
inline std::shared_ptr<gloo::Context> connect_loopback(int rank, int world, const std::string& store) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  std::filesystem::create_directories(store);  // FileStore needs it to exist
  gloo::rendezvous::FileStore files(store);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, world);
  context->connectFullMesh(files, device);
  return context;
}

// Starts `world` copies of this program with "--rank r --store <fresh subdirectory of store>"
// appended to its own arguments, waits for all and removes the subdirectory. 0 when every rank
// exited 0; throws std::runtime_error when one cannot be started.
inline int spawn_ranks(int argc, char** argv, int world, const std::string& store, const std::string& prefix) {
  std::filesystem::create_directories(store);
  std::string dir = (std::filesystem::path(store) / (prefix + "-XXXXXX")).string();
  if (mkdtemp(dir.data()) == nullptr) throw std::runtime_error("cannot create a directory under " + store);
  std::vector<pid_t> children;
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> words(argv, argv + argc);
    words.insert(words.end(), {"--rank", std::to_string(rank), "--store", dir});
    std::vector<char*> child_argv;
    for (std::string& w : words) child_argv.push_back(w.data());
    child_argv.push_back(nullptr);
    pid_t pid = 0;
    if (posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, child_argv.data(), environ) != 0) {
      for (pid_t started : children) kill(started, SIGTERM);
      for (pid_t started : children) waitpid(started, nullptr, 0);
      std::filesystem::remove_all(dir);
      throw std::runtime_error("cannot start rank " + std::to_string(rank));
    }
    children.push_back(pid);
  }
  // The first rank to fail takes the others down: they would wait for it until gloo's timeout.
  int failed = 0;
  for (size_t left = children.size(); left > 0;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0) break;  // no children left
    const auto it = std::find(children.begin(), children.end(), pid);
    if (it == children.end()) continue;
    *it = -1;
    --left;
    if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && !failed) {
      failed = 1;
      for (pid_t other : children)
        if (other > 0) kill(other, SIGTERM);
    }
  }
  std::filesystem::remove_all(dir);
  return failed;
}

// The reference op: gloo::allreduce of f32 with gloo's own sum (compiled at -O3 with the bench:
// bench/CMakeLists.txt), options built per call as any caller builds them, no tag.
// send == nullptr: in place (gloo reduces the output buffer alone).
inline void reference_allreduce(const std::shared_ptr<gloo::Context>& context, float* send, float* recv,
                                size_t count) {
  gloo::AllreduceOptions opts(context);
  if (send != nullptr) opts.setInput(send, count);
  opts.setOutput(recv, count);
  opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
  gloo::allreduce(opts);
}

// main() of a bench: without --rank, start the ranks; with it, run every size as that rank.
// Failures print "<name>[ rank R]: what" and exit 1.
template <class Bench, class Args>
int run_main(const Args& args, int argc, char** argv, const char* name) {
  try {
    if (args.rank < 0) return spawn_ranks(argc, argv, args.world, args.store, name);
    Bench bench(args);
    for (size_t bytes : args.sizes) bench.run_size(bytes);
    return 0;
  } catch (const std::exception& e) {
    if (args.rank < 0) std::fprintf(stderr, "%s: %s\n", name, e.what());
    else std::fprintf(stderr, "%s rank %d: %s\n", name, args.rank, e.what());
    return 1;
  }
}

}  // namespace gloo_bench
