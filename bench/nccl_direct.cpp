// A plain NCCL loop: the independent reference bench/run_nccl_bench.sh and
// scripts/gpu-acceptance.sh compare commbench's nccl numbers with. One process per rank, started
// by the script (like bench/gloo_direct.cpp); the ncclUniqueId goes through a file in --store.
//
// Timing, per size: a 1-element allreduce and a stream synchronisation line the ranks up, then
//  --mode host_batch:    the host clock around `iters` back-to-back enqueued ops and one
//                        cudaStreamSynchronize, elapsed / iters (nccl-tests' default method);
//  --mode batch:         a CUDA event pair around the same `iters` ops, elapsed / iters
//                        (commbench's timing = "batch", gpu_timing = "cuda_event": the mean of its
//                        per-iteration event differences is the same quantity);
//  --mode per_iteration: before every op the ranks line up again, an event pair around the op;
//                        the mean (commbench's timing = "per_iteration" with cuda_event);
//  --mode graph:         `iters` ops captured into one CUDA graph between two event record nodes
//                        (cudaEventRecordExternal), launched once; elapsed / iters (commbench's
//                        timing = "graph"; nccl-tests -G times the launch on the host instead).
// batch also reports host_us: the host time to enqueue one op (the loop between the two event
// records, / iters) — where it exceeds the GPU's time per op, the host sets the pace.
// Rank 0 prints one JSON line per size with this rank's time; every rank writes its own time to
// the store folder and rank 0 also prints the average over ranks (nccl-tests' default -a 1).
//
//   nccl_direct --rank R --world N --store DIR [--op allreduce|allgather|reducescatter|
//               broadcast|alltoall|d2d_copy] [--sizes 8,1024,...] [--iters 20] [--warmup 5]
//               [--mode host_batch|batch|per_iteration|graph] [--device D]
//
// d2d_copy (world 1): cudaMemcpyAsync device-to-device of the size, the copy bandwidth a
// single-rank allreduce is compared with.
// Only NCCL 2.14's API is linked (ncclAlltoAll, 2.28, is looked up at run time), so the same
// binary runs against an older NCCL, e.g. a pip wheel.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "nccl_direct: %s\n", what.c_str());
  std::exit(1);
}
void cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}
void nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) die(std::string(what) + ": " + ncclGetErrorString(r));
}

struct Args {
  int rank = 0, world = 1, iters = 20, warmup = 5, device = -1;
  std::string store, op = "allreduce", mode = "host_batch";
  std::vector<size_t> sizes{8, 1024, 1 << 20};
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--rank") a.rank = std::stoi(v);
    else if (k == "--world") a.world = std::stoi(v);
    else if (k == "--store") a.store = v;
    else if (k == "--op") a.op = v;
    else if (k == "--mode") a.mode = v;
    else if (k == "--iters") a.iters = std::stoi(v);
    else if (k == "--warmup") a.warmup = std::stoi(v);
    else if (k == "--device") a.device = std::stoi(v);
    else if (k == "--sizes") {
      a.sizes.clear();
      std::stringstream ss(v);
      for (std::string s; std::getline(ss, s, ',');) a.sizes.push_back(std::stoull(s));
    } else die("unknown argument " + k);
  }
  if (a.store.empty()) die("--store DIR is required");
  if (a.mode != "host_batch" && a.mode != "batch" && a.mode != "per_iteration" && a.mode != "graph")
    die("--mode is host_batch, batch, per_iteration or graph");
  return a;
}

// The ncclUniqueId through a file: rank 0 writes it (rename makes it appear whole).
ncclUniqueId share_id(const Args& a) {
  ncclUniqueId id{};
  const std::string path = a.store + "/nccl_id";
  if (a.rank == 0) {
    nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::ofstream(path + ".tmp", std::ios::binary).write(id.internal, sizeof(id.internal));
    std::rename((path + ".tmp").c_str(), path.c_str());
    return id;
  }
  for (int tries = 0; tries < 60000; ++tries) {
    std::ifstream in(path, std::ios::binary);
    if (in && in.read(id.internal, sizeof(id.internal))) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  die("rank 0 did not publish the ncclUniqueId within 60 s in " + path);
}

// Elements each rank sends and receives, nccl-tests' size convention: `bytes` is the per-rank
// count times the element size for every op (commbench's convention too).
struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
};

void enqueue(const Args& a, ncclComm_t comm, cudaStream_t s, const Buffers& b, size_t count) {
  if (a.op == "allreduce") nccl(ncclAllReduce(b.send, b.recv, count, ncclFloat32, ncclSum, comm, s), "ncclAllReduce");
  else if (a.op == "allgather") nccl(ncclAllGather(b.send, b.recv, count, ncclFloat32, comm, s), "ncclAllGather");
  else if (a.op == "reducescatter") nccl(ncclReduceScatter(b.send, b.recv, count, ncclFloat32, ncclSum, comm, s), "ncclReduceScatter");
  else if (a.op == "broadcast") nccl(ncclBroadcast(b.send, b.recv, count, ncclFloat32, 0, comm, s), "ncclBroadcast");
  else if (a.op == "alltoall") {
    using AlltoAll = ncclResult_t (*)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    static const auto fn = reinterpret_cast<AlltoAll>(::dlsym(RTLD_DEFAULT, "ncclAlltoAll"));
    if (!fn) die("--op alltoall needs ncclAlltoAll (NCCL >= 2.28)");
    nccl(fn(b.send, b.recv, count, ncclFloat32, comm, s), "ncclAlltoAll");
  }
  else if (a.op == "d2d_copy") cuda(cudaMemcpyAsync(b.recv, b.send, count * sizeof(float), cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync");
  else die("unknown --op " + a.op);
}

double busbw_factor(const std::string& op, int n) {
  if (op == "allreduce") return 2.0 * (n - 1) / n;
  if (op == "allgather" || op == "reducescatter" || op == "alltoall") return static_cast<double>(n - 1) / n;
  return 1.0;
}

struct Timed {
  double us = 0;       // per op
  double host_us = 0;  // batch: host time to enqueue one op; 0 otherwise
};

Timed time_one_size(const Args& a, ncclComm_t comm, cudaStream_t s, const Buffers& b, size_t count, void* sync_buf) {
  using Clock = std::chrono::steady_clock;
  auto line_up = [&] {
    if (comm) nccl(ncclAllReduce(sync_buf, sync_buf, 1, ncclFloat32, ncclSum, comm, s), "ncclAllReduce (sync)");
    cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  };
  for (int i = 0; i < a.warmup; ++i) enqueue(a, comm, s, b, count);
  cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  cudaEvent_t start = nullptr, stop = nullptr;
  cuda(cudaEventCreate(&start), "cudaEventCreate");
  cuda(cudaEventCreate(&stop), "cudaEventCreate");
  auto elapsed_us = [&] {
    float ms = 0;
    cuda(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    return static_cast<double>(ms) * 1e3;
  };
  Timed t;
  if (a.mode == "per_iteration") {
    double sum = 0;
    for (int i = 0; i < a.iters; ++i) {
      line_up();
      cuda(cudaEventRecord(start, s), "cudaEventRecord");
      enqueue(a, comm, s, b, count);
      cuda(cudaEventRecord(stop, s), "cudaEventRecord");
      cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
      sum += elapsed_us();
    }
    t.us = sum / a.iters;
  } else if (a.mode == "graph") {
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cuda(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    cuda(cudaEventRecordWithFlags(start, s, cudaEventRecordExternal), "cudaEventRecordWithFlags");
    for (int i = 0; i < a.iters; ++i) enqueue(a, comm, s, b, count);
    cuda(cudaEventRecordWithFlags(stop, s, cudaEventRecordExternal), "cudaEventRecordWithFlags");
    cuda(cudaStreamEndCapture(s, &graph), "cudaStreamEndCapture");
    cuda(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
    cuda(cudaGraphDestroy(graph), "cudaGraphDestroy");
    line_up();
    cuda(cudaGraphLaunch(exec, s), "cudaGraphLaunch");
    cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    t.us = elapsed_us() / a.iters;
    cudaGraphExecDestroy(exec);
  } else if (a.mode == "batch") {
    line_up();
    const auto h0 = Clock::now();
    cuda(cudaEventRecord(start, s), "cudaEventRecord");
    for (int i = 0; i < a.iters; ++i) enqueue(a, comm, s, b, count);
    cuda(cudaEventRecord(stop, s), "cudaEventRecord");
    t.host_us = std::chrono::duration<double, std::micro>(Clock::now() - h0).count() / a.iters;
    cuda(cudaEventSynchronize(stop), "cudaEventSynchronize");
    t.us = elapsed_us() / a.iters;
  } else {  // host_batch
    line_up();
    const auto t0 = Clock::now();
    for (int i = 0; i < a.iters; ++i) enqueue(a, comm, s, b, count);
    cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    t.us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / a.iters;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  int devices = 0;
  cuda(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
  const int device = a.device >= 0 ? a.device : (devices == 1 ? 0 : a.rank % devices);
  cuda(cudaSetDevice(device), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  if (a.op != "d2d_copy") {
    const ncclUniqueId id = share_id(a);
    nccl(ncclCommInitRank(&comm, a.world, id, a.rank), "ncclCommInitRank");
  }
  cudaStream_t s = nullptr;
  cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  const size_t max_bytes = *std::max_element(a.sizes.begin(), a.sizes.end());
  const size_t n = static_cast<size_t>(a.world);
  const bool gathers = a.op == "allgather" || a.op == "alltoall";
  const bool scatters = a.op == "reducescatter" || a.op == "alltoall";
  Buffers b;
  cuda(cudaMalloc(&b.send, std::max<size_t>(max_bytes * (scatters ? n : 1), 4)), "cudaMalloc");
  cuda(cudaMalloc(&b.recv, std::max<size_t>(max_bytes * (gathers ? n : 1), 4)), "cudaMalloc");
  cuda(cudaMemset(b.send, 0, max_bytes * (scatters ? n : 1)), "cudaMemset");
  void* sync_buf = nullptr;
  cuda(cudaMalloc(&sync_buf, sizeof(float)), "cudaMalloc");
  for (size_t bytes : a.sizes) {
    const size_t count = std::max<size_t>(bytes / sizeof(float), 1);
    const Timed timed = time_one_size(a, comm, s, b, count, sync_buf);
    const double us = timed.us;
    // Every rank leaves its time in the store; rank 0 averages them (nccl-tests' -a 1).
    const std::string mine = a.store + "/time-" + std::to_string(bytes) + "-" + std::to_string(a.rank);
    std::ofstream(mine + ".tmp") << us;
    std::rename((mine + ".tmp").c_str(), mine.c_str());
    if (a.rank != 0) continue;
    double sum = 0;
    for (int r = 0; r < a.world; ++r) {
      const std::string path = a.store + "/time-" + std::to_string(bytes) + "-" + std::to_string(r);
      double t = -1;
      for (int tries = 0; tries < 60000 && t < 0; ++tries) {
        std::ifstream in(path);
        if (!(in >> t)) {
          t = -1;
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      }
      if (t < 0) die("rank " + std::to_string(r) + " reported no time for " + std::to_string(bytes) + " B");
      sum += t;
    }
    const double avg = sum / a.world;
    const double algbw = static_cast<double>(count * sizeof(float)) * (gathers || a.op == "reducescatter" ? n : 1) / (avg * 1e3);
    std::printf("{\"op\":\"%s\",\"mode\":\"%s\",\"world\":%d,\"bytes\":%zu,\"rank0_us\":%.4f,\"avg_us\":%.4f,"
                "\"host_us\":%.4f,\"algbw_GBps\":%.4f,\"busbw_GBps\":%.4f}\n",
                a.op.c_str(), a.mode.c_str(), a.world, bytes, us, avg, timed.host_us, algbw,
                algbw * busbw_factor(a.op, a.world));
    std::fflush(stdout);
  }
  if (comm) ncclCommDestroy(comm);
  cudaFree(b.send);
  cudaFree(b.recv);
  cudaFree(sync_buf);
  cudaStreamDestroy(s);
  return 0;
}
