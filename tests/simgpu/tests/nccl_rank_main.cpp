// One rank of a multi-process simulated-NCCL test: `simgpu_nccl_rank <scenario> <rank> <nranks>
// <nccl library> <uid hex> [<uid hex>]`. Exits 0 when every check of the scenario held; otherwise
// prints what failed and exits 1. The parent test (test_nccl_multiprocess.cpp) spawns the ranks.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "nccl_rank_api.hpp"
#include "nccl_rank_faults.hpp"
#include "nccl_rank_util.hpp"

using namespace rank_util;
using namespace rank_faults;

namespace {

// ---- scenarios -----------------------------------------------------------------------------------------------
void all_collectives(ncclComm_t comm, cudaStream_t s) {
  const size_t C = 700;  // with SIMGPU_NCCL_SLOT_BYTES=4096 every op takes several rounds
  const size_t N = static_cast<size_t>(g_n);
  const int root = g_n - 1;
  for (int ti = 0; ti < ncclNumTypes; ++ti) {
    const auto t = static_cast<ncclDataType_t>(ti);
    const size_t es = esize(t);
    for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg}) {
      std::vector<char> in(C * N * es);
      for (size_t i = 0; i < C * N; ++i) put(t, in, i, val(op, g_rank, i));
      Dev send(C * N * es), recv(C * N * es);
      send.upload(in);
      NCCL_OK(g->ncclAllReduce(send.p, recv.p, C, t, op, comm, s));
      settle(comm, s, "allreduce");
      auto out = recv.download(C * es);
      for (size_t i = 0; i < C; ++i) expect_equal(t, out, i, fold(t, op, i), "allreduce");

      NCCL_OK(g->ncclReduce(send.p, recv.p, C, t, op, root, comm, s));
      settle(comm, s, "reduce");
      if (g_rank == root) {
        out = recv.download(C * es);
        for (size_t i = 0; i < C; ++i) expect_equal(t, out, i, fold(t, op, i), "reduce");
      }
      NCCL_OK(g->ncclReduceScatter(send.p, recv.p, C, t, op, comm, s));
      settle(comm, s, "reducescatter");
      out = recv.download(C * es);
      for (size_t i = 0; i < C; ++i)
        expect_equal(t, out, i, fold(t, op, i, static_cast<size_t>(g_rank) * C), "reducescatter");
    }
    const ncclRedOp_t plain = ncclMax;  // val() for max: the data pattern of the data-movement ops
    std::vector<char> in(C * N * es);
    for (size_t i = 0; i < C * N; ++i) put(t, in, i, val(plain, g_rank, i));
    Dev send(C * N * es), recv(C * N * es);
    send.upload(in);
    auto check = [&](const char* what, size_t count, auto expected) {
      auto out = recv.download(count * es);
      for (size_t i = 0; i < count; ++i) expect_equal(t, out, i, expected(i), what);
    };
    NCCL_OK(g->ncclAllGather(send.p, recv.p, C, t, comm, s));
    settle(comm, s, "allgather");
    check("allgather", C * N, [&](size_t i) { return val(plain, static_cast<int>(i / C), i % C); });
    NCCL_OK(g->ncclBroadcast(send.p, recv.p, C, t, 1 % g_n, comm, s));
    settle(comm, s, "broadcast");
    check("broadcast", C, [&](size_t i) { return val(plain, 1 % g_n, i); });
    NCCL_OK(g->ncclAlltoAll(send.p, recv.p, C, t, comm, s));
    settle(comm, s, "alltoall");
    check("alltoall", C * N, [&](size_t i) { return val(plain, static_cast<int>(i / C), static_cast<size_t>(g_rank) * C + i % C); });
    NCCL_OK(g->ncclGather(send.p, recv.p, C, t, 0, comm, s));
    settle(comm, s, "gather");
    if (g_rank == 0) check("gather", C * N, [&](size_t i) { return val(plain, static_cast<int>(i / C), i % C); });
    NCCL_OK(g->ncclScatter(send.p, recv.p, C, t, 0, comm, s));
    settle(comm, s, "scatter");
    check("scatter", C, [&](size_t i) { return val(plain, 0, static_cast<size_t>(g_rank) * C + i); });
    // Ring exchange in one group: send right, receive from the left.
    const int right = (g_rank + 1) % g_n, left = (g_rank + g_n - 1) % g_n;
    NCCL_OK(g->ncclGroupStart());
    NCCL_OK(g->ncclSend(send.p, C, t, right, comm, s));
    NCCL_OK(g->ncclRecv(recv.p, C, t, left, comm, s));
    NCCL_OK(g->ncclGroupEnd());
    settle(comm, s, "sendrecv");
    check("sendrecv", C, [&](size_t i) { return val(plain, left, i); });
  }
}

void in_place_and_graph(ncclComm_t comm, cudaStream_t s) {
  const size_t C = 300, N = static_cast<size_t>(g_n);
  const ncclDataType_t t = ncclFloat32;
  Dev buf(C * N * 4);
  std::vector<char> in(C * N * 4);
  for (size_t i = 0; i < C * N; ++i) put(t, in, i, val(ncclSum, g_rank, i));
  buf.upload(in);
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, C, t, ncclSum, comm, s));
  settle(comm, s, "in-place allreduce");
  auto out = buf.download(C * 4);
  for (size_t i = 0; i < C; ++i) expect_equal(t, out, i, fold(t, ncclSum, i), "in-place allreduce");

  // In-place allgather: sendbuff = recvbuff + rank*count.
  std::vector<char> mine(C * N * 4);
  for (size_t i = 0; i < C; ++i) put(t, mine, static_cast<size_t>(g_rank) * C + i, val(ncclMax, g_rank, i));
  buf.upload(mine);
  NCCL_OK(g->ncclAllGather(buf.c() + static_cast<size_t>(g_rank) * C * 4, buf.p, C, t, comm, s));
  settle(comm, s, "in-place allgather");
  out = buf.download(C * N * 4);
  for (size_t i = 0; i < C * N; ++i) expect_equal(t, out, i, val(ncclMax, static_cast<int>(i / C), i % C), "in-place allgather");

  // In-place reducescatter: recvbuff = sendbuff + rank*count.
  buf.upload(in);
  NCCL_OK(g->ncclReduceScatter(buf.p, buf.c() + static_cast<size_t>(g_rank) * C * 4, C, t, ncclSum, comm, s));
  settle(comm, s, "in-place reducescatter");
  out = buf.download(C * N * 4);
  for (size_t i = 0; i < C; ++i)
    expect_equal(t, out, static_cast<size_t>(g_rank) * C + i, fold(t, ncclSum, i, static_cast<size_t>(g_rank) * C),
                 "in-place reducescatter");

  // In-place alltoall is undefined in NCCL: refused.
  CHECK(g->ncclAlltoAll(buf.p, buf.p, C, t, comm, s) == ncclInvalidArgument, "in-place alltoall accepted");

  // ncclAvg on f32 is a pre-multiplied sum: sum of float(x_r * (1/n)) in rank order.
  std::vector<char> av(C * 4);
  for (size_t i = 0; i < C; ++i) put(t, av, i, 0.1 * (g_rank + 1) + 0.013 * static_cast<double>(i));
  buf.upload(av);
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, C, t, ncclAvg, comm, s));
  settle(comm, s, "avg");
  out = buf.download(C * 4);
  for (size_t i = 0; i < C; ++i) {
    const float scale = 1.0f / static_cast<float>(g_n);
    float acc = 0;
    for (int r = 0; r < g_n; ++r) {
      float x = static_cast<float>(0.1 * (r + 1) + 0.013 * static_cast<double>(i)) * scale;
      acc = r == 0 ? x : acc + x;
    }
    expect_equal(t, out, i, acc, "avg (pre-multiplied sum)");
  }

  // Captured into a graph: nothing runs at capture; each replay runs the allreduce again.
  for (size_t i = 0; i < C; ++i) put(t, in, i, g_rank + 1);
  buf.upload(in);
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, C, t, ncclSum, comm, s));
  CUDA_OK(cudaStreamEndCapture(s, &graph));
  out = buf.download(4);
  CHECK(get(t, out, 0) == g_rank + 1, "captured allreduce ran during capture");
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, s));
  CUDA_OK(cudaGraphLaunch(exec, s));
  settle(comm, s, "graph");
  out = buf.download(4);
  const double once = g_n * (g_n + 1) / 2.0;
  CHECK(get(t, out, 0) == once * g_n, "two graph replays: got %g, expected %g", get(t, out, 0), once * g_n);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);

  // A pre-multiplied sum with a host scalar: sum over ranks of 3 * x_r.
  float three = 3.0f;
  ncclRedOp_t premul;
  NCCL_OK(g->ncclRedOpCreatePreMulSum(&premul, &three, t, ncclScalarHostImmediate, comm));
  for (size_t i = 0; i < C; ++i) put(t, in, i, g_rank + 1);
  buf.upload(in);
  NCCL_OK(g->ncclAllReduce(buf.p, buf.p, C, t, premul, comm, s));
  settle(comm, s, "premulsum");
  out = buf.download(4);
  CHECK(get(t, out, 0) == 3 * once, "premulsum: got %g, expected %g", get(t, out, 0), 3 * once);
  NCCL_OK(g->ncclRedOpDestroy(premul, comm));
  CHECK(g->ncclAllReduce(buf.p, buf.p, C, t, premul, comm, s) == ncclInvalidArgument, "destroyed redop accepted");

  void* handle = nullptr;
  NCCL_OK(g->ncclCommRegister(comm, buf.p, C * 4, &handle));
  NCCL_OK(g->ncclCommDeregister(comm, handle));
  CHECK(g->ncclCommDeregister(comm, handle) == ncclInvalidArgument, "double deregister accepted");
}

void alltoallv(ncclComm_t comm, cudaStream_t s) {
  CHECK(g->ncclAllToAllv != nullptr, "ncclAllToAllv missing from the NCCLX variant");
  // Rank r sends (r + j + 1) * 50 elements to rank j.
  const size_t N = static_cast<size_t>(g_n);
  std::vector<size_t> sc(N), sd(N), rc(N), rd(N);
  size_t st = 0, rt = 0;
  for (size_t j = 0; j < N; ++j) {
    sc[j] = (static_cast<size_t>(g_rank) + j + 1) * 50;
    sd[j] = st;
    st += sc[j];
    rc[j] = (j + static_cast<size_t>(g_rank) + 1) * 50;
    rd[j] = rt;
    rt += rc[j];
  }
  std::vector<char> in(st * 4);
  for (size_t j = 0; j < N; ++j)
    for (size_t i = 0; i < sc[j]; ++i) put(ncclInt32, in, sd[j] + i, static_cast<double>(g_rank * 100000 + j * 1000 + i));
  Dev send(st * 4), recv(rt * 4);
  send.upload(in);
  NCCL_OK(g->ncclAllToAllv(send.p, sc.data(), sd.data(), recv.p, rc.data(), rd.data(), ncclInt32, comm, s));
  settle(comm, s, "alltoallv");
  auto out = recv.download(rt * 4);
  for (size_t q = 0; q < N; ++q)
    for (size_t i = 0; i < rc[q]; ++i)
      expect_equal(ncclInt32, out, rd[q] + i, static_cast<double>(q * 100000 + static_cast<size_t>(g_rank) * 1000 + i),
                   "alltoallv");
}

ncclResult_t poll_async(ncclComm_t comm, int max_ms) {
  ncclResult_t a = ncclInProgress;
  for (int i = 0; i < max_ms && a == ncclInProgress; ++i) {
    NCCL_OK(g->ncclCommGetAsyncError(comm, &a));
    if (a == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return a;
}

void nonblocking(const ncclUniqueId& id, cudaStream_t s) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t comm = nullptr;
  // Like NCCL 2.28: minCTAs without maxCTAs is refused (min/max are compared before defaults apply).
  cfg.minCTAs = 4;
  ncclResult_t r = g->ncclCommInitRankConfig(&comm, g_n, id, g_rank, &cfg);
  CHECK(r == ncclInvalidArgument, "minCTAs alone: init returned %d, expected ncclInvalidArgument", r);
  cfg.maxCTAs = 8;
  r = g->ncclCommInitRankConfig(&comm, g_n, id, g_rank, &cfg);
  if (g_n > 1) CHECK(r == ncclInProgress, "non-blocking init returned %d, expected ncclInProgress", r);
  CHECK(comm != nullptr, "no communicator handle");
  CHECK(poll_async(comm, 10000) == ncclSuccess, "init did not complete");
  Dev buf(4096);
  std::vector<char> in(4096);
  for (int i = 0; i < 1024; ++i) put(ncclInt32, in, static_cast<size_t>(i), g_rank + 1);
  buf.upload(in);
  r = g->ncclAllReduce(buf.p, buf.p, 1024, ncclInt32, ncclSum, comm, s);
  if (g_n == 1) {
    CHECK(r == ncclSuccess, "single-rank collective on a non-blocking communicator returned %d (launches synchronously)", r);
    return;
  }
  CHECK(r == ncclInProgress, "non-blocking allreduce returned %d, expected ncclInProgress", r);
  // Right after the call the op is not on the stream yet: an event recorded now precedes it.
  cudaEvent_t early;
  CUDA_OK(cudaEventCreate(&early));
  CUDA_OK(cudaEventRecord(early, s));
  CUDA_OK(cudaEventSynchronize(early));
  auto out = buf.download(4);
  CHECK(get(ncclInt32, out, 0) == g_rank + 1, "the op ran before ncclCommGetAsyncError reported success");
  CHECK(poll_async(comm, 10000) == ncclSuccess, "allreduce launch did not complete");
  settle(comm, s, "non-blocking allreduce");
  out = buf.download(4);
  CHECK(get(ncclInt32, out, 0) == g_n * (g_n + 1) / 2, "non-blocking allreduce result %g", get(ncclInt32, out, 0));
  // Reusing the communicator before the previous call reported ncclSuccess: NCCL's error.
  CHECK(g->ncclAllReduce(buf.p, buf.p, 1024, ncclInt32, ncclSum, comm, s) == ncclInProgress, "second allreduce");
  r = g->ncclAllReduce(buf.p, buf.p, 1024, ncclInt32, ncclSum, comm, s);
  // NCCL 2.28's ncclCommEnsureReady turns "still in progress" into ncclInvalidArgument.
  CHECK(r == ncclInvalidArgument, "early reuse returned %d, expected ncclInvalidArgument", r);
  const std::string msg = g->ncclGetLastError(comm);
  CHECK(msg.find("Attempt to use communicator before the previous operation returned ncclSuccess") != std::string::npos,
        "last error: %s", msg.c_str());
  ncclResult_t a = ncclSuccess;
  NCCL_OK(g->ncclCommGetAsyncError(comm, &a));
  CHECK(a == ncclInvalidArgument, "async error after early reuse: %d", a);
  CHECK(g->ncclCommDestroy(comm) == ncclInvalidArgument, "destroy of a communicator with an error succeeded");
  CUDA_OK(cudaStreamSynchronize(s));
  NCCL_OK(g->ncclCommAbort(comm));
}

void p2p_serialisation(const ncclUniqueId& id1, const ncclUniqueId& id2, cudaStream_t s) {
  const int peer = 1 - g_rank;
  Dev a(4096), b(4096), token(64);
  CUDA_OK(cudaMemset(a.p, g_rank + 1, 4096));
  CUDA_OK(cudaMemset(b.p, 0, 4096));
  ncclComm_t comm = init_blocking(id1);
  ncclComm_t other = init_blocking(id2);
  cudaStream_t side;
  CUDA_OK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  // Ungrouped: each rank posts its receive first. Receives block the stream until matched, so the
  // sends queued behind them never start: a deadlock, as on a GPU.
  NCCL_OK(g->ncclRecv(b.p, 4096, ncclUint8, peer, comm, s));
  NCCL_OK(g->ncclSend(a.p, 4096, ncclUint8, peer, comm, s));
  for (int i = 0; i < 40; ++i) {
    CHECK(cudaStreamQuery(s) == cudaErrorNotReady, "ungrouped recv-then-send completed after %d ms: no serialisation", i * 25);
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  std::fprintf(stderr, "rank %d: ungrouped recv-then-send still not done after 1 s (deadlock, as expected)\n", g_rank);
  // Both ranks have watched long enough before either aborts (an abort releases the peer too).
  NCCL_OK(g->ncclAllReduce(token.p, token.p, 16, ncclInt32, ncclSum, other, side));
  settle(other, side, "barrier on the second communicator");
  NCCL_OK(g->ncclCommAbort(comm));
  CUDA_OK(cudaStreamSynchronize(s));  // the abort released the stream
  // The same posts inside one group progress together.
  NCCL_OK(g->ncclGroupStart());
  NCCL_OK(g->ncclRecv(b.p, 4096, ncclUint8, peer, other, s));
  NCCL_OK(g->ncclSend(a.p, 4096, ncclUint8, peer, other, s));
  // Inside the group nothing has reached the stream yet: an event recorded now completes at once and
  // the receive buffer is untouched (this is why events must be recorded after ncclGroupEnd).
  cudaEvent_t inside;
  CUDA_OK(cudaEventCreate(&inside));
  CUDA_OK(cudaEventRecord(inside, s));
  CUDA_OK(cudaEventSynchronize(inside));
  CHECK(cudaStreamQuery(s) == cudaSuccess, "group ops reached the stream before ncclGroupEnd");
  CHECK(b.download(1)[0] == 0, "group ops ran before ncclGroupEnd");
  NCCL_OK(g->ncclGroupEnd());
  settle(other, s, "grouped recv+send");
  auto out = b.download(4096);
  CHECK(static_cast<unsigned char>(out[4095]) == peer + 1, "grouped p2p data %d", out[4095]);
  NCCL_OK(g->ncclCommDestroy(other));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: %s scenario rank nranks nccl-library uid [uid2]\n", argv[0]);
    return 2;
  }
  const std::string scenario = argv[1];
  g_rank = std::atoi(argv[2]);
  g_n = std::atoi(argv[3]);
  NcclFns fns(argv[4]);
  g = &fns;
  const ncclUniqueId id = parse_uid(argv[5]);
  const ncclUniqueId id2 = argc > 6 ? parse_uid(argv[6]) : id;
  const char* dev = std::getenv("SIMGPU_TEST_DEVICE");  // default: one GPU per rank
  CUDA_OK(cudaSetDevice(dev ? std::atoi(dev) : g_rank));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  if (scenario == "collectives") {
    ncclComm_t comm = init_blocking(id);
    all_collectives(comm, s);
    in_place_and_graph(comm, s);
    if (g->ncclAllToAllv != nullptr) alltoallv(comm, s);
    NCCL_OK(g->ncclCommFinalize(comm));
    NCCL_OK(g->ncclCommDestroy(comm));
  } else if (scenario == "alltoallv") {
    ncclComm_t comm = init_blocking(id);
    alltoallv(comm, s);
    NCCL_OK(g->ncclCommDestroy(comm));
  } else if (scenario == "nonblocking") {
    nonblocking(id, s);
  } else if (scenario == "single") {
    single_rank(id, s);
  } else if (scenario == "p2p") {
    p2p_serialisation(id, id2, s);
  } else if (scenario == "mismatch") {
    mismatch(id, s);
  } else if (scenario == "duplicate") {
    duplicate_gpu(id);
  } else if (scenario == "abort") {
    abort_then_use(id, s);
  } else if (scenario == "fault_init") {
    fault_init(id);
  } else if (scenario == "fault_async") {
    fault_async(id, s);
  } else if (scenario == "fault_hang") {
    fault_hang(id, s);
  } else if (scenario == "comm_memory") {
    comm_memory(id, s);
  } else if (scenario == "peer_exit") {
    peer_exit(id, s);
  } else if (scenario == "fp8_avg_one_rank") {
    fp8_avg_one_rank(id, s);
  } else if (scenario == "fp8_cc80") {
    fp8_needs_sm90(id, s);
  } else {
    fail("unknown scenario %s", scenario.c_str());
  }
  std::fprintf(stderr, "rank %d: %s passed\n", g_rank, scenario.c_str());
  return 0;
}
