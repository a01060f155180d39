#include "streams.hpp"

#include <algorithm>

#include "../common/knobs.hpp"

namespace simgpu {
namespace {

template <class T>
bool contains(const std::vector<T*>& v, const T* x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

template <class T>
bool erase(std::vector<T*>& v, const T* x) {
  auto it = std::find(v.begin(), v.end(), x);
  if (it == v.end()) return false;
  v.erase(it);
  return true;
}

}  // namespace

Streams& Streams::get() {
  static Streams* s = new Streams();  // never destroyed: worker threads (a hung op) may outlive exit
  return *s;
}

Stream* Streams::legacy(int physical) {
  if (static_cast<size_t>(physical) >= legacy_.size()) legacy_.resize(static_cast<size_t>(physical) + 1, nullptr);
  Stream*& l = legacy_[static_cast<size_t>(physical)];
  if (l == nullptr) {
    l = new Stream();
    l->physical = physical;
    l->legacy = true;
    streams_.push_back(l);
    std::thread([this, s = l] { run(s); }).detach();
  }
  return l;
}

Stream* Streams::resolve(cudaStream_t h, int current_physical) {
  std::lock_guard<std::mutex> lk(mu_);
  if (h == nullptr || h == cudaStreamLegacy || h == cudaStreamPerThread) {
    if (current_physical < 0) return nullptr;
    return legacy(current_physical);
  }
  Stream* s = reinterpret_cast<Stream*>(h);
  return contains(streams_, s) ? s : nullptr;
}

Stream* Streams::create(int physical, bool blocking) {
  auto* s = new Stream();
  s->physical = physical;
  s->blocking = blocking;
  std::lock_guard<std::mutex> lk(mu_);
  streams_.push_back(s);
  std::thread([this, s] { run(s); }).detach();
  return s;
}

void Streams::destroy(Stream* s) {
  // Like CUDA: returns at once; queued work still runs, then the worker ends. The object stays
  // allocated (events and waits may still point at it) but the handle is no longer accepted.
  std::lock_guard<std::mutex> lk(mu_);
  erase(streams_, s);
  s->destroyed = true;
  cv_.notify_all();
}

namespace {
// Set by an event-record task; applied by the worker in the same critical section that counts the task
// complete, so "event done" and "stream idle up to the event" become visible together.
thread_local std::function<void()> t_on_complete;
}  // namespace

void Streams::run(Stream* s) {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return !s->queue.empty() || s->destroyed; });
    if (s->queue.empty()) return;  // destroyed and drained
    Task t = s->queue.front();
    lk.unlock();
    t();
    lk.lock();
    if (t_on_complete) {
      t_on_complete();
      t_on_complete = nullptr;
    }
    s->queue.pop_front();
    ++s->completed;
    cv_.notify_all();
  }
}

void Streams::push(Stream* s, Task t) {
  if (s->capture.active) {
    s->capture.tasks.push_back(std::move(t));
    return;
  }
  // Legacy default stream semantics: work on it waits for all earlier work on the device's blocking
  // streams, and work on a blocking stream waits for earlier work on the legacy stream.
  auto wait_for = [this](Stream* other, unsigned long long target) {
    return [this, other, target] {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [&] { return other->completed >= target; });
    };
  };
  if (s->legacy) {
    for (Stream* b : streams_) {
      if (b != s && b->blocking && !b->legacy && b->physical == s->physical && b->completed < b->enqueued) {
        s->queue.push_back(wait_for(b, b->enqueued));
        ++s->enqueued;
      }
    }
  } else if (s->blocking && static_cast<size_t>(s->physical) < legacy_.size()) {
    Stream* l = legacy_[static_cast<size_t>(s->physical)];
    if (l != nullptr && l->completed < l->enqueued) {
      s->queue.push_back(wait_for(l, l->enqueued));
      ++s->enqueued;
    }
  }
  s->queue.push_back(std::move(t));
  ++s->enqueued;
  cv_.notify_all();
}

void Streams::enqueue(Stream* s, Task t) {
  std::lock_guard<std::mutex> lk(mu_);
  push(s, std::move(t));
}

void Streams::enqueue_all(Stream* s, const std::vector<Task>& ts) {
  std::lock_guard<std::mutex> lk(mu_);
  for (const Task& t : ts) push(s, t);
}

void Streams::synchronize(Stream* s) {
  std::unique_lock<std::mutex> lk(mu_);
  const unsigned long long target = s->enqueued;
  cv_.wait(lk, [&] { return s->completed >= target; });
}

bool Streams::idle(Stream* s) {
  std::lock_guard<std::mutex> lk(mu_);
  return s->completed >= s->enqueued;
}

void Streams::synchronize_device(int physical) {
  std::vector<std::pair<Stream*, unsigned long long>> targets;
  std::unique_lock<std::mutex> lk(mu_);
  for (Stream* s : streams_)
    if (s->physical == physical) targets.emplace_back(s, s->enqueued);
  for (auto& [s, target] : targets) cv_.wait(lk, [&] { return s->completed >= target; });
}

cudaError_t Streams::begin_capture(Stream* s, cudaStreamCaptureMode mode) {
  std::lock_guard<std::mutex> lk(mu_);
  if (s->legacy) return cudaErrorStreamCaptureUnsupported;  // the legacy stream cannot be captured
  if (s->capture.active) return cudaErrorIllegalState;
  s->capture = Capture{};
  s->capture.active = true;
  s->capture.mode = mode;
  s->capture.thread = std::this_thread::get_id();
  SIMGPU_LOG("cudart: capture begins on stream %p (mode %d)", static_cast<void*>(s), static_cast<int>(mode));
  return cudaSuccess;
}

cudaError_t Streams::end_capture(Stream* s, Graph** out) {
  std::unique_lock<std::mutex> lk(mu_);
  if (!s->capture.active) return cudaErrorIllegalState;
  if (s->capture.mode != cudaStreamCaptureModeRelaxed && s->capture.thread != std::this_thread::get_id())
    return cudaErrorStreamCaptureWrongThread;
  Capture c = std::move(s->capture);
  s->capture = Capture{};
  lk.unlock();
  if (c.invalidated) {
    *out = nullptr;
    return cudaErrorStreamCaptureInvalidated;
  }
  *out = new_graph(std::move(c.tasks));
  return cudaSuccess;
}

cudaStreamCaptureStatus Streams::capture_status(Stream* s) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!s->capture.active) return cudaStreamCaptureStatusNone;
  return s->capture.invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
}

cudaError_t Streams::unsafe_call() {
  std::lock_guard<std::mutex> lk(mu_);
  cudaError_t err = cudaSuccess;
  for (Stream* s : streams_) {
    Capture& c = s->capture;
    if (!c.active) continue;
    if (c.mode == cudaStreamCaptureModeGlobal ||
        (c.mode == cudaStreamCaptureModeThreadLocal && c.thread == std::this_thread::get_id())) {
      c.invalidated = true;
      err = cudaErrorStreamCaptureUnsupported;
    }
  }
  if (err != cudaSuccess) SIMGPU_LOG("cudart: call not permitted during stream capture; capture invalidated");
  return err;
}

cudaError_t Streams::invalidate_if_capturing(Stream* s) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!s->capture.active) return cudaSuccess;
  s->capture.invalidated = true;
  return cudaErrorStreamCaptureUnsupported;
}

Event* Streams::create_event(unsigned flags) {
  auto* e = new Event();
  e->flags = flags;
  std::lock_guard<std::mutex> lk(mu_);
  events_.push_back(e);
  return e;
}

bool Streams::destroy_event(Event* e) {
  std::lock_guard<std::mutex> lk(mu_);
  return erase(events_, e);  // kept allocated: queued record tasks may still touch it
}

bool Streams::valid_event(Event* e) {
  std::lock_guard<std::mutex> lk(mu_);
  return contains(events_, e);
}

void Streams::record(Event* e, Stream* s, bool external) {
  std::lock_guard<std::mutex> lk(mu_);
  if (s->capture.active && !external) {
    // CUDA makes no graph node for a plain record during capture: the event only marks a point
    // for other streams joining the capture, and is unusable outside it.
    e->captured = true;
    return;
  }
  e->captured = false;
  if (s->capture.active) {
    // An external record node: the event is (re)recorded each time the graph's replay reaches it.
    push(s, [e] {
      t_on_complete = [e] {  // runs under mu_
        e->ever_recorded = true;
        e->done = ++e->recorded;
        e->when = std::chrono::steady_clock::now();
      };
    });
    return;
  }
  e->ever_recorded = true;
  const unsigned long long gen = ++e->recorded;
  push(s, [e, gen] {
    t_on_complete = [e, gen] {  // runs under mu_
      if (e->done < gen) {
        e->done = gen;
        e->when = std::chrono::steady_clock::now();
      }
    };
  });
}

bool Streams::event_captured(Event* e) {
  std::lock_guard<std::mutex> lk(mu_);
  return e->captured;
}

bool Streams::event_done(Event* e) {
  std::lock_guard<std::mutex> lk(mu_);
  return e->done >= e->recorded;
}

void Streams::event_synchronize(Event* e) {
  std::unique_lock<std::mutex> lk(mu_);
  const unsigned long long target = e->recorded;
  cv_.wait(lk, [&] { return e->done >= target; });
}

void Streams::wait_event(Stream* s, Event* e) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!e->ever_recorded) return;  // waiting on a never-recorded event is a no-op in CUDA
  const unsigned long long target = e->recorded;
  push(s, [this, e, target] {
    std::unique_lock<std::mutex> lk2(mu_);
    cv_.wait(lk2, [&] { return e->done >= target; });
  });
}

Graph* Streams::new_graph(std::vector<Task> tasks) {
  auto* g = new Graph{std::move(tasks)};
  std::lock_guard<std::mutex> lk(mu_);
  graphs_.push_back(g);
  return g;
}

bool Streams::destroy_graph(Graph* g) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!erase(graphs_, g)) return false;
  delete g;
  return true;
}

bool Streams::valid_graph(Graph* g) {
  std::lock_guard<std::mutex> lk(mu_);
  return contains(graphs_, g);
}

Graph* Streams::instantiate(Graph* g) {
  std::lock_guard<std::mutex> lk(mu_);
  auto* x = new Graph{g->tasks};
  execs_.push_back(x);
  return x;
}

bool Streams::destroy_exec(Graph* g) {
  std::lock_guard<std::mutex> lk(mu_);
  return erase(execs_, g);  // kept allocated: its tasks were copied onto streams, nothing else refers to it
}

bool Streams::valid_exec(Graph* g) {
  std::lock_guard<std::mutex> lk(mu_);
  return contains(execs_, g);
}

}  // namespace simgpu
