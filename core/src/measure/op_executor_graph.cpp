#include <algorithm>
#include <chrono>

#include "measure/iteration_clock.h"
#include "measure/op_executor.h"
#include "measure/page_faults.h"

// method = "graph" (nccl-tests -G): collectives captured into a CUDA graph, timed by event nodes.
namespace commbench {

std::string OpExecutor::graph_reason(bool capturable) const {
  if (!setup_.stream_ordered || !setup_.gpu)
    return "method = \"graph\" needs memory = \"cuda\" on a stream-ordered backend (NCCL)";
  if (!capturable)
    return "method = \"graph\": the backend does not declare CB_CAP_GRAPH_CAPTURE (its posts cannot "
           "be captured into a CUDA graph); use method = \"batch\"";
  if (op_info(spec_.op).point_to_point)
    return "method = \"graph\" captures collectives only; time point-to-point patterns with "
           "method = \"batch\"";
  if (setup_.timing != TimingMethod::CudaEvent)
    return "method = \"graph\" is timed with CUDA events; write gpu_timing = \"cuda_event\"";
  return "";
}

namespace {

// Iterations captured into one graph. nccl-tests captures its -n (20 by default); min_time or a
// large `iterations` could ask for 100,000, and each captured NCCL collective is a persistent plan
// of its own (host and device memory, seconds of cudaGraphInstantiate). Larger rounds relaunch it.
constexpr int kMaxGraphIterations = 1000;

// Milliseconds left until `deadline` (at least 1: the wait then reports the timeout itself).
int32_t ms_left(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return static_cast<int32_t>(std::max<int64_t>(1, left.count()));
}

}  // namespace

std::vector<double> OpExecutor::run_graph(int n, int32_t timeout_ms, const std::function<void()>& before_launch) {
  GpuDevice& gpu = *setup_.gpu;
  const cuda::Runtime& rt = gpu.rt();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  const int per_graph = std::clamp(n, 1, kMaxGraphIterations);
  const int group = event_group(per_graph);  // event nodes cost GPU time too (event_group)
  for (int g = 0; g <= (per_graph + group - 1) / group; ++g) gpu.event(static_cast<size_t>(g));
  std::vector<double> out;
  out.reserve(static_cast<size_t>(std::max(n, 0)));
  // The full-size graph is launched again for each further round of `per_graph` iterations; a
  // shorter last round gets a graph of its own. Every launch starts synchronised (before_launch):
  // the event spans inside a launch are the samples, the host's wait between launches none.
  cuda::GraphExec full = nullptr;
  try {
    while (static_cast<int>(out.size()) < n) {
      const int m = std::min(per_graph, n - static_cast<int>(out.size()));
      cuda::GraphExec instance = m == per_graph && full ? full : capture_graph(m, group);
      if (m == per_graph) full = instance;
      try {
        before_launch();
        PageFaultSpan faults(timed_page_faults_);
        rt.check(rt.GraphLaunch(instance, gpu.stream()), "cudaGraphLaunch");
        wait_for_stream(gpu, ms_left(deadline));
      } catch (...) {
        if (instance != full) rt.GraphExecDestroy(instance);
        throw;
      }
      if (instance != full) rt.GraphExecDestroy(instance);
      const std::vector<double> part = group_samples(m, group);
      out.insert(out.end(), part.begin(), part.end());
    }
  } catch (...) {
    if (full) rt.GraphExecDestroy(full);
    throw;
  }
  if (full) rt.GraphExecDestroy(full);
  return out;
}

cuda::GraphExec OpExecutor::capture_graph(int n, int group) {
  GpuDevice& gpu = *setup_.gpu;
  const cuda::Runtime& rt = gpu.rt();
  const cb_op_args args = base_args();
  // Capture: the posts only record work into the graph (CB_CAP_GRAPH_CAPTURE, docs/plugin-abi.md);
  // the graph's launch is their completion (enqueue, or a request released without a wait). The
  // events are recorded as graph nodes (cudaEventRecordExternal): a plain record during capture
  // makes no node and leaves the event unusable (cudaErrorCapturedEvent).
  rt.check(rt.StreamBeginCapture(gpu.stream(), cuda::kCaptureModeThreadLocal), "cudaStreamBeginCapture");
  cuda::Graph graph = nullptr;
  try {
    gpu.record_event(0, true);
    for (int i = 0; i < n; ++i) {
      session_.enqueue(args);
      if ((i + 1) % group == 0 || i + 1 == n) gpu.record_event(static_cast<size_t>(i / group) + 1, true);
    }
  } catch (...) {
    rt.StreamEndCapture(gpu.stream(), &graph);  // leave the stream usable
    if (graph) rt.GraphDestroy(graph);
    throw;
  }
  rt.check(rt.StreamEndCapture(gpu.stream(), &graph), "cudaStreamEndCapture");
  cuda::GraphExec instance = nullptr;
  const cuda::Error inst = rt.GraphInstantiate(&instance, graph, 0);
  rt.GraphDestroy(graph);
  rt.check(inst, "cudaGraphInstantiate");
  return instance;
}

}  // namespace commbench
