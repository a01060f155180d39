// Simulated CUDA runtime: streams run asynchronously and in order, events time them, capture records
// work into graphs and refuses synchronising calls.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace {

void CUDART_CB sleep_ms(void* arg) {
  std::this_thread::sleep_for(std::chrono::milliseconds(reinterpret_cast<intptr_t>(arg)));
}
void CUDART_CB increment(void* arg) { ++*static_cast<std::atomic<int>*>(arg); }

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t n) { EXPECT_EQ(cudaMalloc(&p, n), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(p); }
};

TEST(SimCudaStreams, WorkQueuedBehindSlowHostFuncIsNotDoneUntilSync) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  DeviceBuffer d(4096);
  int* h = nullptr;
  ASSERT_EQ(cudaMallocHost(reinterpret_cast<void**>(&h), 4096), cudaSuccess);
  for (int i = 0; i < 1024; ++i) h[i] = 0;
  ASSERT_EQ(cudaMemset(d.p, 0x01, 4096), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, sleep_ms, reinterpret_cast<void*>(intptr_t{300})), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(h, d.p, 4096, cudaMemcpyDeviceToHost, s), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(s), cudaErrorNotReady);
  EXPECT_EQ(h[0], 0) << "the copy ran before the host function ahead of it finished";
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(h[1023], 0x01010101);
  EXPECT_EQ(cudaStreamQuery(s), cudaSuccess);
  cudaFreeHost(h);
  cudaStreamDestroy(s);
}

TEST(SimCudaStreams, OperationsRunInStreamOrder) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  DeviceBuffer a(256), b(256);
  std::vector<unsigned char> out(256);
  for (int v = 1; v <= 50; ++v) {
    ASSERT_EQ(cudaMemsetAsync(a.p, v, 256, s), cudaSuccess);
    ASSERT_EQ(cudaMemcpyAsync(b.p, a.p, 256, cudaMemcpyDeviceToDevice, s), cudaSuccess);
  }
  ASSERT_EQ(cudaMemcpyAsync(out.data(), b.p, 256, cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(out[0], 50);
  EXPECT_EQ(out[255], 50);
  cudaStreamDestroy(s);
}

TEST(SimCudaStreams, LegacyDefaultStreamWaitsForBlockingStreams) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);  // blocking: synchronises with stream 0
  DeviceBuffer d(64);
  ASSERT_EQ(cudaMemset(d.p, 0, 64), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, sleep_ms, reinterpret_cast<void*>(intptr_t{100})), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d.p, 7, 64, s), cudaSuccess);
  unsigned char out[64] = {};
  ASSERT_EQ(cudaMemcpy(out, d.p, 64, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out[0], 7) << "cudaMemcpy on the legacy stream did not wait for the blocking stream";
  cudaStreamDestroy(s);
}

TEST(SimCudaStreams, EventsTimeWorkAndReportIncompleteness) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t a, b, never, notiming;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&never), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&notiming, cudaEventDisableTiming), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, never), cudaErrorInvalidResourceHandle) << "never recorded";
  ASSERT_EQ(cudaEventRecord(a, s), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, sleep_ms, reinterpret_cast<void*>(intptr_t{200})), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(b, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(notiming, s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(b), cudaErrorNotReady);
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorNotReady);
  ASSERT_EQ(cudaEventSynchronize(b), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(b), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 195.0f);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, notiming), cudaErrorInvalidResourceHandle);
  for (cudaEvent_t e : {a, b, never, notiming}) EXPECT_EQ(cudaEventDestroy(e), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(a), cudaErrorInvalidResourceHandle) << "destroyed event";
  cudaGetLastError();
  cudaStreamDestroy(s);
}

TEST(SimCudaStreams, StreamWaitEventOrdersAcrossStreams) {
  cudaStream_t s1, s2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  DeviceBuffer d(128);
  ASSERT_EQ(cudaMemset(d.p, 0, 128), cudaSuccess);
  cudaEvent_t e;
  ASSERT_EQ(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s1, sleep_ms, reinterpret_cast<void*>(intptr_t{80})), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d.p, 9, 128, s1), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(e, s1), cudaSuccess);
  ASSERT_EQ(cudaStreamWaitEvent(s2, e, 0), cudaSuccess);
  unsigned char out[128] = {};
  ASSERT_EQ(cudaMemcpyAsync(out, d.p, 128, cudaMemcpyDeviceToHost, s2), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  EXPECT_EQ(out[127], 9) << "s2 read before s1's write it waited for";
  cudaEventDestroy(e);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

TEST(SimCudaStreams, CaptureRecordsAndGraphReplays) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  DeviceBuffer a(64), b(64);
  ASSERT_EQ(cudaMemset(b.p, 0, 64), cudaSuccess);
  std::atomic<int> runs{0};
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cudaStreamCaptureStatus st;
  ASSERT_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusActive);
  ASSERT_EQ(cudaMemsetAsync(a.p, 3, 64, s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(b.p, a.p, 64, cudaMemcpyDeviceToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, increment, &runs), cudaSuccess);
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  ASSERT_NE(g, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(runs.load(), 0) << "captured work ran during capture";
  unsigned char out[64] = {};
  ASSERT_EQ(cudaMemcpy(out, b.p, 64, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out[0], 0);
  cudaGraphExec_t x = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(runs.load(), 2);
  ASSERT_EQ(cudaMemcpy(out, b.p, 64, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(out[63], 3);
  EXPECT_EQ(cudaGraphExecDestroy(x), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  cudaStreamDestroy(s);
}

TEST(SimCudaStreams, SynchronisingCallsDuringCaptureFailAndInvalidate) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  DeviceBuffer d(64);
  void* p = nullptr;
  cudaGraph_t g = nullptr;

  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&p, 64), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(g, nullptr);

  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
  cudaStreamCaptureStatus st;
  ASSERT_EQ(cudaStreamIsCapturing(s, &st), cudaSuccess);
  EXPECT_EQ(st, cudaStreamCaptureStatusInvalidated);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);

  unsigned char h[64];
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h, d.p, 64, cudaMemcpyDeviceToHost), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);

  // Thread-local mode: another thread's cudaMalloc is allowed.
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudaError_t other = cudaErrorUnknown;
  std::thread([&] { other = cudaMalloc(&p, 64); }).join();
  EXPECT_EQ(other, cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(g), cudaSuccess);
  cudaFree(p);
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported)
      << "the legacy stream cannot be captured";
  cudaGetLastError();
  cudaStreamDestroy(s);
}

}  // namespace

namespace {

// CUDA makes no graph node for a plain cudaEventRecord during capture: the event is "captured",
// and querying, synchronising or timing it fails with cudaErrorCapturedEvent (907). An event
// recorded with cudaEventRecordExternal becomes a node that every launch records.
TEST(SimCudaStreams, PlainEventRecordDuringCaptureLeavesTheEventUnusable) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  DeviceBuffer d(64);
  cudaEvent_t plain, start, stop;
  ASSERT_EQ(cudaEventCreate(&plain), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&stop), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(plain, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecordWithFlags(start, s, cudaEventRecordExternal), cudaSuccess);
  ASSERT_EQ(cudaLaunchHostFunc(s, sleep_ms, reinterpret_cast<void*>(intptr_t{30})), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d.p, 1, 64, s), cudaSuccess);
  ASSERT_EQ(cudaEventRecordWithFlags(stop, s, cudaEventRecordExternal), cudaSuccess);
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphExec_t x = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(x, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventQuery(plain), cudaErrorCapturedEvent);
  EXPECT_EQ(cudaEventSynchronize(plain), cudaErrorCapturedEvent);
  EXPECT_EQ(cudaEventElapsedTime(&ms, plain, stop), cudaErrorCapturedEvent);
  EXPECT_EQ(cudaEventQuery(start), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  EXPECT_GE(ms, 25.0f) << "the external events bracket the graph's 30 ms host function";
  ASSERT_EQ(cudaEventRecordWithFlags(plain, s, 0x80), cudaErrorInvalidValue);
  ASSERT_EQ(cudaEventRecord(plain, s), cudaSuccess);  // outside a capture: usable again
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(plain), cudaSuccess);
  cudaGetLastError();
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);
  cudaEventDestroy(plain);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(s);
}

}  // namespace
