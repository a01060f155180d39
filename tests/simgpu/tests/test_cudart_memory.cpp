// Simulated CUDA runtime: device memory is not host-addressable, copies are checked, memory is
// accounted per device.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <string>
#include <vector>

#include "self_exec.hpp"

namespace {

TEST(SimCudaMemory, HostReadOfDevicePointerCrashesWithSegv) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  pid_t pid = ::fork();
  if (pid == 0) {
    volatile int x = *static_cast<volatile int*>(d);  // must fault like a GPU pointer would
    (void)x;
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "a host read of device memory did not crash";
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
}

TEST(SimCudaMemory, HostWriteOfDevicePointerCrashesWithSegv) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 64), cudaSuccess);
  pid_t pid = ::fork();
  if (pid == 0) {
    static_cast<volatile char*>(d)[0] = 1;
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  cudaFree(d);
}

TEST(SimCudaMemory, RoundTripThroughTwoDevices) {
  std::vector<int> in(1000), out(1000, -1);
  for (int i = 0; i < 1000; ++i) in[i] = i * 7 + 3;
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&a, 4000), cudaSuccess);
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&b, 4000), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(a, in.data(), 4000, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(b, a, 4000, cudaMemcpyDeviceToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(out.data(), b, 4000, cudaMemcpyDefault), cudaSuccess);
  EXPECT_EQ(out, in);
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, b), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeDevice);
  EXPECT_EQ(attr.device, 1);
  ASSERT_EQ(cudaPointerGetAttributes(&attr, in.data()), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeUnregistered);
  EXPECT_EQ(cudaFree(a), cudaSuccess);
  EXPECT_EQ(cudaFree(b), cudaSuccess);
  cudaSetDevice(0);
}

TEST(SimCudaMemory, WrongCopyKindOrRangeIsInvalidValue) {
  void* d = nullptr;
  std::vector<char> h(256);
  ASSERT_EQ(cudaMalloc(&d, 100), cudaSuccess);
  cudaGetLastError();
  EXPECT_EQ(cudaMemcpy(d, h.data(), 100, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(h.data(), d, 100, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(h.data(), h.data() + 128, 100, cudaMemcpyDeviceToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemcpy(d, h.data(), 101, cudaMemcpyHostToDevice), cudaErrorInvalidValue) << "past the end";
  EXPECT_EQ(cudaMemcpy(static_cast<char*>(d) + 50, h.data(), 51, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(static_cast<char*>(d) + 1, 0, 100), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemset(h.data(), 0, 10), cudaErrorInvalidValue) << "memset of host memory";
  EXPECT_EQ(cudaMemcpy(d, h.data(), 100, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaFree(static_cast<char*>(d) + 8), cudaErrorInvalidValue) << "not the allocation's start";
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaErrorInvalidValue) << "double free";
  EXPECT_EQ(cudaMemcpy(d, h.data(), 10, cudaMemcpyHostToDevice), cudaErrorInvalidValue) << "use after free";
}

TEST(SimCudaMemory, PinnedHostMemoryIsTrackedAndUsable) {
  void* p = nullptr;
  void* d = nullptr;
  ASSERT_EQ(cudaMallocHost(&p, 1024), cudaSuccess);
  std::memset(p, 0x5a, 1024);  // ordinary host memory
  cudaPointerAttributes attr{};
  ASSERT_EQ(cudaPointerGetAttributes(&attr, p), cudaSuccess);
  EXPECT_EQ(attr.type, cudaMemoryTypeHost);
  ASSERT_EQ(cudaMalloc(&d, 1024), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d, p, 1024, cudaMemcpyHostToDevice), cudaSuccess);
  std::vector<unsigned char> back(1024);
  ASSERT_EQ(cudaMemcpy(back.data(), d, 1024, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back[1023], 0x5a);
  EXPECT_EQ(cudaFreeHost(p), cudaSuccess);
  std::vector<char> plain(64);
  EXPECT_EQ(cudaFreeHost(plain.data()), cudaErrorInvalidValue);
  EXPECT_EQ(cudaHostRegister(plain.data(), 64, 0), cudaSuccess);
  EXPECT_EQ(cudaHostRegister(plain.data() + 8, 8, 0), cudaErrorHostMemoryAlreadyRegistered);
  EXPECT_EQ(cudaHostUnregister(plain.data()), cudaSuccess);
  EXPECT_EQ(cudaHostUnregister(plain.data()), cudaErrorHostMemoryNotRegistered);
  cudaFree(d);
}

TEST(SimCudaMemory, MemGetInfoAccountsAllocations) {
  size_t free0 = 0, total = 0, free1 = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_EQ(total, prop.totalGlobalMem);
  EXPECT_NE(std::string(prop.name).find("simulated"), std::string::npos);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 10 << 20), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free0 - free1, size_t{10 << 20});
  cudaFree(d);
  ASSERT_EQ(cudaMemGetInfo(&free1, &total), cudaSuccess);
  EXPECT_EQ(free1, free0);
}

TEST(SimChildMemory, OutOfMemory) {
  SIMGPU_CHILD_ONLY();
  size_t free0 = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free0, &total), cudaSuccess);
  ASSERT_EQ(total, size_t{64} << 20);
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(cudaMalloc(&a, 40 << 20), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&b, 40 << 20), cudaErrorMemoryAllocation);
  EXPECT_EQ(b, nullptr);
  EXPECT_EQ(cudaFree(a), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&b, 40 << 20), cudaSuccess) << "freed memory is reusable";
}

TEST(SimCudaMemory, OutOfMemoryFromDeviceMemoryKnob) {
  auto r = simgpu_test::run_child_test("SimChildMemory.OutOfMemory", {"SIMGPU_DEVICE_MEMORY=64MiB"});
  EXPECT_TRUE(r.exited && r.code == 0) << "child exit " << r.code << " signal " << r.signal;
}

TEST(SimChildMemory, MallocFaultAndVisibleDevices) {
  SIMGPU_CHILD_ONLY();
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 2);
  char bus[32];
  ASSERT_EQ(cudaDeviceGetPCIBusId(bus, sizeof bus, 0), cudaSuccess);
  EXPECT_STREQ(bus, "0000:13:00.0") << "ordinal 0 is physical device 3";
  EXPECT_EQ(cudaSetDevice(2), cudaErrorInvalidDevice);
  void *a = nullptr, *b = nullptr, *c = nullptr;
  EXPECT_EQ(cudaMalloc(&a, 16), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&b, 16), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&c, 16), cudaErrorMemoryAllocation) << "SIMGPU_FAIL_MALLOC_AFTER=2";
}

TEST(SimCudaMemory, MallocFaultKnobAndCudaVisibleDevices) {
  auto r = simgpu_test::run_child_test("SimChildMemory.MallocFaultAndVisibleDevices",
                                       {"SIMGPU_FAIL_MALLOC_AFTER=2", "CUDA_VISIBLE_DEVICES=3,5"});
  EXPECT_TRUE(r.exited && r.code == 0) << "child exit " << r.code << " signal " << r.signal;
}

TEST(SimChildMemory, FaultLimitedToOtherRank) {
  SIMGPU_CHILD_ONLY();
  void* a = nullptr;
  EXPECT_EQ(cudaMalloc(&a, 16), cudaSuccess) << "the fault is for rank 1; this process is rank 0";
}

TEST(SimCudaMemory, MallocFaultLimitedToOneRank) {
  auto r = simgpu_test::run_child_test("SimChildMemory.FaultLimitedToOtherRank",
                                       {"SIMGPU_FAIL_MALLOC_AFTER=0", "SIMGPU_FAULT_RANK=1", "RANK=0"});
  EXPECT_TRUE(r.exited && r.code == 0) << "child exit " << r.code << " signal " << r.signal;
}

}  // namespace

namespace {

TEST(SimChildMemory, NoDevices) {
  SIMGPU_CHILD_ONLY();
  int n = -1;
  EXPECT_EQ(cudaGetDeviceCount(&n), cudaErrorNoDevice);
  EXPECT_EQ(n, 0);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorNoDevice);
}

TEST(SimCudaMemory, ZeroDevicesFromDeviceCountKnob) {
  auto r = simgpu_test::run_child_test("SimChildMemory.NoDevices", {"SIMGPU_DEVICE_COUNT=0"});
  EXPECT_TRUE(r.exited && r.code == 0) << "child exit " << r.code << " signal " << r.signal;
}

TEST(SimCudaMemory, CudaFreeWaitsForQueuedWork) {
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 1 << 20), cudaSuccess);
  std::atomic<bool> done{false};
  ASSERT_EQ(cudaLaunchHostFunc(
                s, [](void* f) {
                  std::this_thread::sleep_for(std::chrono::milliseconds(80));
                  static_cast<std::atomic<bool>*>(f)->store(true);
                },
                &done),
            cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(d, 1, 1 << 20, s), cudaSuccess);
  EXPECT_EQ(cudaFree(d), cudaSuccess);
  EXPECT_TRUE(done.load()) << "cudaFree returned while work that may use the buffer was still queued";
  cudaStreamDestroy(s);
}

}  // namespace

namespace {

// CUDA: a cudaMemcpy from pageable host memory to the device may return before the data lands, and
// runs on the legacy stream, which a non-blocking stream does not wait for. Code that uploads
// that way and then reads on its own stream sees the old contents on a real GPU.
TEST(SimCudaMemory, PageableCopyToTheDeviceLandsLateAndUnorderedWithNonBlockingStreams) {
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  cudaStream_t s;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  std::vector<unsigned char> in(4096, 7), out(4096, 0);
  ASSERT_EQ(cudaMemcpy(d, in.data(), in.size(), cudaMemcpyHostToDevice), cudaSuccess);
  std::fill(in.begin(), in.end(), 9);  // the source was taken at the call: reusing it is fine
  ASSERT_EQ(cudaMemcpyAsync(out.data(), d, out.size(), cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_NE(out[0], 7) << "a non-blocking stream saw a pageable upload that CUDA does not order with it";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // waits for the legacy stream too
  ASSERT_EQ(cudaMemcpyAsync(out.data(), d, out.size(), cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(out[0], 7);
  EXPECT_EQ(out[4095], 7);
  // The same upload on the stream itself, then synchronised: ordered, as the core does it.
  std::fill(in.begin(), in.end(), 5);
  ASSERT_EQ(cudaMemcpyAsync(d, in.data(), in.size(), cudaMemcpyHostToDevice, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(out.data(), d, out.size(), cudaMemcpyDeviceToHost, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(out[100], 5);
  cudaStreamDestroy(s);
  cudaFree(d);
}

}  // namespace
