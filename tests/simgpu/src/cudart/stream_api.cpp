// Exported CUDA runtime entry points: streams, events, host functions, stream capture and graphs.
#include <atomic>
#include <cstring>

#include "../common/knobs.hpp"
#include "../common/simgpu_private.h"
#include "api_common.hpp"

using namespace simgpu;

namespace {

Stream* lookup(cudaStream_t s) { return Streams::get().resolve(s, current_physical()); }
Event* event_of(cudaEvent_t e) {
  Event* ev = reinterpret_cast<Event*>(e);
  return (e != nullptr && Streams::get().valid_event(ev)) ? ev : nullptr;
}

}  // namespace

SIMGPU_API cudaError_t simgpu_stream_enqueue(cudaStream_t stream, const std::function<void()>* fn) {
  Stream* s = lookup(stream);
  if (s == nullptr) return cudaErrorInvalidResourceHandle;
  Streams::get().enqueue(s, *fn);
  return cudaSuccess;
}

SIMGPU_API int simgpu_stream_physical(cudaStream_t stream) {
  Stream* s = lookup(stream);
  return s == nullptr ? -1 : s->physical;
}

SIMGPU_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (pStream == nullptr) return fail(cudaErrorInvalidValue);
  if (current_physical() < 0) return fail(cudaErrorNoDevice);
  *pStream = reinterpret_cast<cudaStream_t>(
      Streams::get().create(current_physical(), (flags & cudaStreamNonBlocking) == 0));
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaStreamCreate(cudaStream_t* pStream) { return cudaStreamCreateWithFlags(pStream, 0); }

SIMGPU_API cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  Stream* s = lookup(stream);
  if (s == nullptr || s->legacy) return fail(cudaErrorInvalidResourceHandle);
  Streams::get().destroy(s);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  Stream* s = lookup(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = Streams::get().invalidate_if_capturing(s)) return fail(e);
  Streams::get().synchronize(s);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaStreamQuery(cudaStream_t stream) {
  Stream* s = lookup(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (cudaError_t e = Streams::get().invalidate_if_capturing(s)) return fail(e);
  return Streams::get().idle(s) ? cudaSuccess : cudaErrorNotReady;  // NotReady is not a sticky error
}

SIMGPU_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int /*flags*/) {
  Stream* s = lookup(stream);
  Event* e = event_of(event);
  if (s == nullptr || e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (Streams::get().event_captured(e) && Streams::get().capture_status(s) == cudaStreamCaptureStatusNone)
    return fail(cudaErrorCapturedEvent);  // the simulation has no cross-stream capture to join
  Streams::get().wait_event(s, e);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void* userData) {
  Stream* s = lookup(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (fn == nullptr) return fail(cudaErrorInvalidValue);
  Streams::get().enqueue(s, [fn, userData] { fn(userData); });
  return cudaSuccess;
}

// ---- events --------------------------------------------------------------------------------------------
namespace {
std::atomic<unsigned long long> g_events_created{0};
}  // namespace

// For tests: how many events this process has created (a harness must not create any on a timed path).
SIMGPU_API unsigned long long simgpu_events_created() { return g_events_created.load(); }

SIMGPU_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  if (event == nullptr) return fail(cudaErrorInvalidValue);
  ++g_events_created;
  *event = reinterpret_cast<cudaEvent_t>(Streams::get().create_event(flags));
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, 0); }

SIMGPU_API cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event == nullptr || !Streams::get().destroy_event(reinterpret_cast<Event*>(event)))
    return fail(cudaErrorInvalidResourceHandle);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  Event* e = event_of(event);
  Stream* s = lookup(stream);
  if (e == nullptr || s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  Streams::get().record(e, s);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags) {
  Event* e = event_of(event);
  Stream* s = lookup(stream);
  if (e == nullptr || s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if ((flags & ~static_cast<unsigned>(cudaEventRecordExternal)) != 0) return fail(cudaErrorInvalidValue);
  Streams::get().record(e, s, (flags & cudaEventRecordExternal) != 0);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaEventQuery(cudaEvent_t event) {
  Event* e = event_of(event);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (Streams::get().event_captured(e)) return fail(cudaErrorCapturedEvent);
  return Streams::get().event_done(e) ? cudaSuccess : cudaErrorNotReady;
}

SIMGPU_API cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Event* e = event_of(event);
  if (e == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (Streams::get().event_captured(e)) return fail(cudaErrorCapturedEvent);
  Streams::get().event_synchronize(e);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return fail(cudaErrorInvalidValue);
  Event* a = event_of(start);
  Event* b = event_of(end);
  if (a == nullptr || b == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if ((a->flags & cudaEventDisableTiming) || (b->flags & cudaEventDisableTiming))
    return fail(cudaErrorInvalidResourceHandle);
  if (Streams::get().event_captured(a) || Streams::get().event_captured(b)) return fail(cudaErrorCapturedEvent);
  if (!a->ever_recorded || !b->ever_recorded) return fail(cudaErrorInvalidResourceHandle);
  if (!Streams::get().event_done(a) || !Streams::get().event_done(b)) return cudaErrorNotReady;  // not sticky
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return cudaSuccess;
}

// ---- capture and graphs ---------------------------------------------------------------------------------
SIMGPU_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode) {
  Stream* s = lookup(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  return fail(Streams::get().begin_capture(s, mode));
}

SIMGPU_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  Stream* s = lookup(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (pGraph == nullptr) return fail(cudaErrorInvalidValue);
  Graph* g = nullptr;
  cudaError_t e = Streams::get().end_capture(s, &g);
  *pGraph = reinterpret_cast<cudaGraph_t>(g);
  return fail(e);
}

SIMGPU_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  Stream* s = lookup(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (status == nullptr) return fail(cudaErrorInvalidValue);
  *status = Streams::get().capture_status(s);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph,
                                            unsigned long long /*flags*/) {
  Graph* g = reinterpret_cast<Graph*>(graph);
  if (pGraphExec == nullptr || g == nullptr || !Streams::get().valid_graph(g)) return fail(cudaErrorInvalidValue);
  *pGraphExec = reinterpret_cast<cudaGraphExec_t>(Streams::get().instantiate(g));
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  Graph* x = reinterpret_cast<Graph*>(graphExec);
  Stream* s = lookup(stream);
  if (s == nullptr) return fail(cudaErrorInvalidResourceHandle);
  if (x == nullptr || !Streams::get().valid_exec(x)) return fail(cudaErrorInvalidValue);
  SIMGPU_LOG("cudart: graph launch %p (%zu tasks)", static_cast<void*>(x), x->tasks.size());
  Streams::get().enqueue_all(s, x->tasks);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  if (!Streams::get().destroy_exec(reinterpret_cast<Graph*>(graphExec))) return fail(cudaErrorInvalidValue);
  return cudaSuccess;
}

SIMGPU_API cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  if (!Streams::get().destroy_graph(reinterpret_cast<Graph*>(graph))) return fail(cudaErrorInvalidValue);
  return cudaSuccess;
}
