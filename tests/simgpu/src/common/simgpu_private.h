// Private interface of the simulated libcudart.so.13, used only by the simulated libnccl.so.2
// (version node SIMGPU_PRIVATE). Product code never calls these.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>

extern "C" {
// Host view of [dev, dev+bytes) if the whole range lies inside one live device allocation;
// *physical receives the owning physical device index. nullptr otherwise.
void* simgpu_device_view(const void* dev, size_t bytes, int* physical);
// Physical device of a stream (0/legacy: the calling thread's current device); -1 for an invalid handle.
int simgpu_stream_physical(cudaStream_t stream);
// Events created so far in this process (tests: nothing may create one on a timed path).
unsigned long long simgpu_events_created();
// Physical device index of a visible device ordinal (-1 if invalid).
int simgpu_physical_device(int ordinal);
// Compute capability major*10+minor of the simulated devices.
int simgpu_compute_capability();
// Device memory taken outside cudaMalloc (no fault knob, no capture check), e.g. a communicator's own
// buffers; simgpu_release_device_memory gives it back.
cudaError_t simgpu_reserve_device_memory(int physical, size_t bytes, void** out);
void simgpu_release_device_memory(void* p);
// Tells the runtime which NCCL rank this process is, for SIMGPU_FAULT_RANK.
void simgpu_set_fault_rank(int rank);
int simgpu_fault_applies();
// Copies *fn onto the stream in order (or into the stream's capture graph: it must then be re-runnable).
cudaError_t simgpu_stream_enqueue(cudaStream_t stream, const std::function<void()>* fn);
}
