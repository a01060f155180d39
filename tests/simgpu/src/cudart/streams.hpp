// Streams, events and graphs. Every stream (the legacy default stream of each device too) owns a
// worker thread that runs its work in order, asynchronously to the host. One global mutex/condition
// variable guards all of it: the simulation's speed is irrelevant, its correctness is not.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace simgpu {

using Task = std::function<void()>;

struct Capture {
  bool active = false;
  bool invalidated = false;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  std::thread::id thread;
  std::vector<Task> tasks;
};

struct Stream {
  int physical = 0;
  bool legacy = false;    // the device's legacy default stream (handle 0 / cudaStreamLegacy)
  bool blocking = true;   // synchronises with the legacy stream (not cudaStreamNonBlocking)
  bool destroyed = false;
  std::deque<Task> queue;
  unsigned long long enqueued = 0, completed = 0;
  Capture capture;
};

struct Event {
  unsigned flags = 0;
  bool ever_recorded = false;
  // Last recorded by a plain cudaEventRecord on a capturing stream: no graph node was made, and
  // CUDA refuses to query, synchronise or time it (cudaErrorCapturedEvent) until it is recorded
  // again outside a capture. cudaEventRecordWithFlags(cudaEventRecordExternal) makes a node instead.
  bool captured = false;
  unsigned long long recorded = 0, done = 0;  // generations: complete when done >= recorded
  std::chrono::steady_clock::time_point when;
};

struct Graph {
  std::vector<Task> tasks;
};

class Streams {
 public:
  static Streams& get();

  // Resolves a handle (0, cudaStreamLegacy and cudaStreamPerThread mean the current device's legacy
  // stream). nullptr for an unknown or destroyed handle.
  Stream* resolve(cudaStream_t s, int current_physical);
  Stream* create(int physical, bool blocking);
  void destroy(Stream* s);

  // In order on the stream, or recorded into its capture. Returns the capture status problem if any.
  void enqueue(Stream* s, Task t);
  void enqueue_all(Stream* s, const std::vector<Task>& ts);
  // Waits until everything enqueued on s so far has run.
  void synchronize(Stream* s);
  bool idle(Stream* s);
  void synchronize_device(int physical);  // every stream of the device

  // Stream capture. unsafe_call() is what cudaMalloc/cudaMemcpy/... call: it fails (and invalidates
  // the capture) while a global-mode capture runs anywhere, or a thread-local one on this thread.
  cudaError_t begin_capture(Stream* s, cudaStreamCaptureMode mode);
  cudaError_t end_capture(Stream* s, Graph** out);
  cudaStreamCaptureStatus capture_status(Stream* s);
  cudaError_t unsafe_call();
  cudaError_t invalidate_if_capturing(Stream* s);  // sync/query on a capturing stream

  Event* create_event(unsigned flags);
  bool destroy_event(Event* e);
  bool valid_event(Event* e);
  // `external`: cudaEventRecordExternal (a graph node when `s` is capturing).
  void record(Event* e, Stream* s, bool external = false);
  bool event_captured(Event* e);
  bool event_done(Event* e);
  void event_synchronize(Event* e);
  void wait_event(Stream* s, Event* e);

  Graph* new_graph(std::vector<Task> tasks);
  bool destroy_graph(Graph* g);
  bool valid_graph(Graph* g);
  Graph* instantiate(Graph* g);
  bool destroy_exec(Graph* g);
  bool valid_exec(Graph* g);

 private:
  Streams() = default;
  void run(Stream* s);
  void push(Stream* s, Task t);  // holds mu_
  Stream* legacy(int physical);  // holds mu_

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Stream*> streams_;   // live, including legacy ones
  std::vector<Stream*> legacy_;    // by physical index
  std::vector<Event*> events_;
  std::vector<Graph*> graphs_, execs_;
};

}  // namespace simgpu
