// commbench's Gloo plugin against gloo::allreduce in the same processes, on the same buffers, in
// alternating blocks (issue 25 §1; bench/run_gloo_interleaved.sh runs it). Separate jobs
// cannot resolve a 2 % difference on a small VM whose speed drifts by ±15 % over fractions of a
// second: two identical programs in alternating jobs miss 1.02 in 3-8 of 16 cases
// (docs/performance.md). Blocks about 10 ms long (one op at 64 MiB: 40-110 ms) share the drift.
//
// Three sides, each block running all three in an order that cycles through the six permutations:
//   plugin  - the Gloo plugin (PLUGIN.so) through the C ABI alone, called as a commbench worker
//             calls it under timing = "batch": one cb_backend_api::complete per op on arguments
//             built once, f32 sum, the plugin's own context, device and reduction;
//   direct  - gloo::allreduce with gloo::sum<float> (built -O3), as bench/gloo_direct;
//   direct2 - the same loop again on a second context of its own (its own TCP device, so its own
//             I/O thread and TCP connections, as the plugin has): the A/A control. Its ratio to
//             `direct` shows what this method resolves, including what differs between contexts
//             for the life of the processes: where the scheduler put each one's I/O thread (see
//             --pin) and how far the kernel grew each connection's TCP buffers
//             (bench/tcp_buffers.sh). So the script runs several launches.
// A block is a gloo barrier (untimed), then the host clock around K ops; each rank's elapsed / K.
// Barriers, the plugin's bootstrap and the final gather go over a fourth context, so that the three
// measured contexts carry nothing but their own ops. After the blocks one more op on each side is
// checked element by element: what was timed reduced.
// Rank 0 prints one JSON line per size with, for each side, every block's time averaged over the
// ranks (the `batch` default rank aggregation):
//   {"bytes":B,"world":N,"placement":"in","block_ops":K,"blocks":NB,
//    "plugin_us":[...],"direct_us":[...],"direct2_us":[...]}
// What this leaves out of a whole commbench job (the core's loop, the worker's other threads) is
// measured separately (docs/performance.md, "The plugin against gloo in the same processes").
//
// Usage: gloo_interleaved --plugin PLUGIN.so --world N --store DIR --sizes B[,B...]
//            [--placement in|out] [--warmup W] [--blocks NB] [--block-ops K] [--pin none|rank|spread]
// Without --rank it starts the N ranks itself, as bench/gloo_direct does.
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>

#include "commbench/backend.h"
#include "gloo_bench_common.h"

namespace {

struct Args : gloo_bench::CommonArgs {
  std::string plugin;
  int blocks = 36;
  int block_ops = 8;
  std::string pin = "none";  // none | rank | spread
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "gloo_interleaved: %s\nusage: gloo_interleaved --plugin PLUGIN.so --world N --store DIR "
               "--sizes BYTES[,BYTES...] [--placement in|out] [--warmup W] [--blocks NB] [--block-ops K] "
               "[--pin none|rank|spread]\n",
               problem.c_str());
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args args;  // the callback sets this bench's own flags; the assignment sets the shared ones only
  static_cast<gloo_bench::CommonArgs&>(args) =
      gloo_bench::parse_flags(argc, argv, usage, [&](const std::string& flag, const std::string& value) {
        if (flag == "--plugin") args.plugin = value;
        else if (flag == "--blocks") args.blocks = gloo_bench::parse_int(flag, value);
        else if (flag == "--block-ops") args.block_ops = gloo_bench::parse_int(flag, value);
        else if (flag == "--pin" && (value == "none" || value == "rank" || value == "spread")) args.pin = value;
        else if (flag == "--pin") usage("--pin is none, rank or spread, got '" + value + "'");
        else return false;
        return true;
      });
  if (args.plugin.empty()) usage("--plugin is required (the Gloo plugin's .so, e.g. build/lib/commbench/plugins/libcommbench_backend_gloo.so)");
  if (args.blocks < 6 || args.blocks % 6 != 0)
    usage("--blocks must be a multiple of 6 (each order of the three sides equally often), got " +
          std::to_string(args.blocks));
  if (args.block_ops < 1) usage("--block-ops must be at least 1");
  return args;
}

// The plugin's bootstrap goes over the control context (never while a block runs) and its
// key/value store over the rendezvous files.
struct HostContext {
  std::shared_ptr<gloo::Context> context;  // control: barriers, bootstrap, the final gather
  std::unique_ptr<gloo::rendezvous::FileStore> files;
};

cb_status host_allgather(void* ctx, const void* send, size_t bytes, void* recv, int32_t) {
  auto* h = static_cast<HostContext*>(ctx);
  try {
    gloo::AllgatherOptions opts(h->context);
    opts.setInput(static_cast<uint8_t*>(const_cast<void*>(send)), bytes);
    opts.setOutput(static_cast<uint8_t*>(recv), bytes * static_cast<size_t>(h->context->size));
    gloo::allgather(opts);
    return CB_OK;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_interleaved: bootstrap allgather: %s\n", e.what());
    return CB_ERR_INTERNAL;
  }
}

cb_status host_broadcast(void* ctx, void* buffer, size_t bytes, int32_t root, int32_t) {
  auto* h = static_cast<HostContext*>(ctx);
  try {
    gloo::BroadcastOptions opts(h->context);
    opts.setOutput(static_cast<uint8_t*>(buffer), bytes);
    opts.setRoot(root);
    gloo::broadcast(opts);
    return CB_OK;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_interleaved: bootstrap broadcast: %s\n", e.what());
    return CB_ERR_INTERNAL;
  }
}

cb_status host_barrier(void* ctx, int32_t) {
  auto* h = static_cast<HostContext*>(ctx);
  try {
    gloo::BarrierOptions opts(h->context);
    gloo::barrier(opts);
    return CB_OK;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_interleaved: bootstrap barrier: %s\n", e.what());
    return CB_ERR_INTERNAL;
  }
}

cb_status host_kv_set(void* ctx, const char* key, const void* value, size_t length, int32_t) {
  auto* h = static_cast<HostContext*>(ctx);
  const auto* bytes = static_cast<const char*>(value);
  try {
    h->files->set(std::string("kv.") + key, std::vector<char>(bytes, bytes + length));
    return CB_OK;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_interleaved: kv_set %s: %s\n", key, e.what());
    return CB_ERR_INTERNAL;
  }
}

cb_status host_kv_get(void* ctx, const char* key, void* value, size_t capacity, size_t* length, int32_t timeout_ms) {
  auto* h = static_cast<HostContext*>(ctx);
  const std::string name = std::string("kv.") + key;
  try {
    h->files->wait({name}, std::chrono::milliseconds(timeout_ms < 0 ? 300000 : timeout_ms));
    const std::vector<char> v = h->files->get(name);
    std::memcpy(value, v.data(), std::min(capacity, v.size()));
    *length = v.size();
    return CB_OK;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gloo_interleaved: kv_get %s: %s\n", key, e.what());
    return CB_ERR_TIMEOUT;
  }
}

void host_log(void*, cb_log_level level, const char* message) {
  if (level <= CB_LOG_WARN) std::fprintf(stderr, "gloo_interleaved: plugin: %s\n", message);
}

// The plugin, loaded and connected as a worker loads it (init, comm_create), closed on exit.
class Plugin {
 public:
  Plugin(const Args& args, HostContext& host_ctx) {
    library_ = dlopen(args.plugin.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr)
      throw std::runtime_error(std::string("cannot load the plugin: ") + dlerror() +
                               " (build the commbench_backend_gloo target, or give its path with --plugin)");
    using Entry = const cb_backend_api* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(library_, CB_ENTRY_SYMBOL));
    api_ = entry != nullptr ? entry() : nullptr;
    if (api_ == nullptr || api_->abi_major != CB_ABI_MAJOR ||
        api_->struct_size < CB_STRUCT_SIZE(cb_backend_api, complete) || api_->complete == nullptr)
      throw std::runtime_error(args.plugin + " is not a commbench plugin of ABI " + std::to_string(CB_ABI_MAJOR) +
                               " with `complete` (1.1); rebuild it against this tree's backend.h");
    // A member: the ABI lets a plugin keep the pointer until finalize (backend.h).
    host_.struct_size = sizeof host_;
    host_.ctx = &host_ctx;
    host_.rank = args.rank;
    host_.world_size = args.world;
    host_.local_rank = args.rank;
    host_.local_world_size = args.world;
    host_.log = host_log;
    host_.bootstrap_allgather = host_allgather;
    host_.bootstrap_broadcast = host_broadcast;
    host_.bootstrap_barrier = host_barrier;
    host_.kv_set = host_kv_set;
    host_.kv_get = host_kv_get;
    check(api_->init(&host_, &backend_), "init");
    if (cb_error* e = api_->comm_create(backend_, 60000, &comm_)) {
      api_->finalize(backend_);  // the destructor does not run for a constructor that throws
      backend_ = nullptr;
      check(e, "comm_create");
    }
  }
  ~Plugin() {
    if (comm_ != nullptr) api_->comm_destroy(comm_);
    if (backend_ != nullptr) api_->finalize(backend_);
    // The library stays loaded: gloo's threads may still unwind through it at exit.
  }
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  void complete(const cb_op_args& args) { check(api_->complete(comm_, &args, 300000), "allreduce"); }

 private:
  void check(cb_error* e, const char* what) {
    if (e == nullptr) return;
    const std::string message = api_->error_message(e);
    api_->error_destroy(e);
    throw std::runtime_error(std::string("plugin ") + what + ": " + message);
  }

  void* library_ = nullptr;
  const cb_backend_api* api_ = nullptr;
  cb_host_services host_{};
  cb_backend* backend_ = nullptr;
  cb_comm* comm_ = nullptr;
};

enum Side { kPlugin, kDirect, kDirect2, kSides };
constexpr const char* kSideNames[kSides] = {"plugin", "direct", "direct2"};
// Every order of the three sides once per six blocks, so that none always follows another.
constexpr std::array<std::array<Side, 3>, 6> kOrders = {{{kPlugin, kDirect, kDirect2},
                                                         {kDirect, kDirect2, kPlugin},
                                                         {kDirect2, kPlugin, kDirect},
                                                         {kPlugin, kDirect2, kDirect},
                                                         {kDirect2, kDirect, kPlugin},
                                                         {kDirect, kPlugin, kDirect2}}};

// --pin: where each rank's threads run, the same for all three sides, so that the scheduler's
// placement of each context's I/O thread (fixed for a launch, and worth ±15 % here: the A/A
// between two contexts of one process) is not one more difference between them. A gloo TCP
// device starts its I/O thread when it is created, with its creator's CPU mask.
//   rank:   every thread of rank r on the r-th allowed CPU (round robin);
//   spread: rank r's own thread there, its contexts' I/O threads on the next one.
class Pinning {
 public:
  Pinning(const std::string& mode, int rank) : mode_(mode) {
    if (mode_ == "none") return;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
      throw std::runtime_error(std::string("sched_getaffinity: ") + std::strerror(errno) + "; run with --pin none");
    std::vector<int> cpus;
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    main_ = cpus[static_cast<size_t>(rank) % cpus.size()];
    io_ = mode_ == "spread" ? cpus[static_cast<size_t>(rank + 1) % cpus.size()] : main_;
    set(io_);  // what is created from here on starts there
  }
  // Called once every context exists: this thread to its own CPU.
  void settle() const {
    if (mode_ != "none") set(main_);
  }

 private:
  static void set(int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
      throw std::runtime_error("sched_setaffinity to CPU " + std::to_string(cpu) + ": " + std::strerror(errno) +
                               "; run with --pin none");
  }
  std::string mode_;
  int main_ = 0, io_ = 0;
};

class Bench {
 public:
  explicit Bench(const Args& args)
      : args_(args), pinning_(args.pin, args.rank), host_{gloo_bench::connect_loopback(args.rank, args.world, args.store),
                           std::make_unique<gloo::rendezvous::FileStore>(args.store)},
        direct_(gloo_bench::connect_loopback(args.rank, args.world, args.store + "/direct")),
        direct2_(gloo_bench::connect_loopback(args.rank, args.world, args.store + "/direct2")),
        plugin_(args, host_) {
    pinning_.settle();
  }

  void run_size(size_t bytes) {
    const size_t count = bytes / sizeof(float);
    gloo_bench::PageBuffer send(bytes), recv(bytes);  // both sides reduce in these
    for (size_t i = 0; i < count; ++i) send.data()[i] = static_cast<float>((args_.rank + i) % 3 + 1);
    float* input = args_.in_place ? nullptr : send.data();
    cb_op_args op{};
    op.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
    op.op = CB_OP_ALLREDUCE;
    op.sendbuf = args_.in_place ? recv.data() : send.data();  // in place: sendbuf == recvbuf
    op.recvbuf = recv.data();
    op.count = count;
    op.dtype = CB_DTYPE_F32;
    op.redop = CB_REDOP_SUM;
    op.mem_type = CB_MEM_HOST;

    auto run = [&](Side side) {
      if (side == kPlugin) plugin_.complete(op);
      else gloo_bench::reference_allreduce(side == kDirect ? direct_ : direct2_, input, recv.data(), count);
    };
    for (int s = 0; s < kSides; ++s)
      for (int i = 0; i < args_.warmup; ++i) run(static_cast<Side>(s));

    std::vector<double> mine(static_cast<size_t>(kSides * args_.blocks));
    for (int b = 0; b < args_.blocks; ++b) {
      for (Side side : kOrders[static_cast<size_t>(b) % kOrders.size()]) {
        gloo::BarrierOptions barrier(host_.context);
        gloo::barrier(barrier);
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < args_.block_ops; ++i) run(side);
        const auto t1 = std::chrono::steady_clock::now();
        mine[static_cast<size_t>(side * args_.blocks + b)] =
            std::chrono::duration<double, std::micro>(t1 - t0).count() / args_.block_ops;
      }
    }
    verify(send, recv, count);

    std::vector<double> everyone(mine.size() * static_cast<size_t>(args_.world));
    gloo::AllgatherOptions gather(host_.context);
    gather.setInput(mine.data(), mine.size());
    gather.setOutput(everyone.data(), everyone.size());
    gloo::allgather(gather);
    if (args_.rank != 0) return;
    std::string line = "{\"bytes\":" + std::to_string(bytes) + ",\"world\":" + std::to_string(args_.world) +
                       ",\"placement\":\"" + (args_.in_place ? "in" : "out") +
                       "\",\"block_ops\":" + std::to_string(args_.block_ops) +
                       ",\"blocks\":" + std::to_string(args_.blocks);
    for (int s = 0; s < kSides; ++s) {
      line += std::string(",\"") + kSideNames[s] + "_us\":[";
      for (int b = 0; b < args_.blocks; ++b) {
        double sum = 0;
        for (int r = 0; r < args_.world; ++r)
          sum += everyone[static_cast<size_t>(r) * mine.size() + static_cast<size_t>(s * args_.blocks + b)];
        char number[32];
        std::snprintf(number, sizeof number, "%s%.3f", b == 0 ? "" : ",", sum / args_.world);
        line += number;
      }
      line += "]";
    }
    std::printf("%s}\n", line.c_str());
    std::fflush(stdout);
  }

 private:
  // What was timed did the work: one more op on each side in each placement, every element
  // checked against the sum over ranks of send's pattern (small integers: exact in f32).
  void verify(gloo_bench::PageBuffer& send, gloo_bench::PageBuffer& recv, size_t count) {
    cb_op_args op{};
    op.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
    op.op = CB_OP_ALLREDUCE;
    op.recvbuf = recv.data();
    op.count = count;
    op.dtype = CB_DTYPE_F32;
    op.redop = CB_REDOP_SUM;
    op.mem_type = CB_MEM_HOST;
    for (bool in_place : {false, true}) {
      op.sendbuf = in_place ? recv.data() : send.data();
      for (Side side : {kPlugin, kDirect, kDirect2}) {
        if (in_place) std::copy(send.data(), send.data() + count, recv.data());
        else std::fill(recv.data(), recv.data() + count, -1.0f);
        if (side == kPlugin) plugin_.complete(op);
        else gloo_bench::reference_allreduce(side == kDirect ? direct_ : direct2_, in_place ? nullptr : send.data(),
                                             recv.data(), count);
        for (size_t i = 0; i < count; ++i) {
          float expected = 0;
          for (int r = 0; r < args_.world; ++r) expected += static_cast<float>((r + i) % 3 + 1);
          if (recv.data()[i] != expected)
            throw std::runtime_error(std::string(kSideNames[side]) + "'s " + (in_place ? "in-place" : "out-of-place") +
                                     " allreduce of " + std::to_string(count) + " floats left " +
                                     std::to_string(recv.data()[i]) + " at element " + std::to_string(i) +
                                     ", expected " + std::to_string(expected));
        }
      }
    }
  }

  const Args& args_;
  Pinning pinning_;  // first: the contexts below start their threads under it
  HostContext host_;
  std::shared_ptr<gloo::Context> direct_, direct2_;
  Plugin plugin_;
};

}  // namespace

int main(int argc, char** argv) {
  return gloo_bench::run_main<Bench>(parse_args(argc, argv), argc, argv, "gloo_interleaved");
}
