// One send or recv in flight, and the thread that lets test() poll it.
//
// gloo offers only blocking waits on an unbound buffer, and a wait that times out closes every
// connection of the context, so a short wait cannot serve as a non-blocking test. Instead, the
// first test() of a transfer hands it to the communicator's progress thread, which does the
// blocking wait and records the outcome; test() then just reads that outcome. wait() on a
// transfer nobody has tested waits inline, so the usual post-then-wait pattern (and its
// measured latency) involves no thread hop. Data moves in gloo's own I/O thread either way.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include <gloo/transport/unbound_buffer.h>

namespace commbench::gloo_backend {

class ProgressThread;

class Transfer : public std::enable_shared_from_this<Transfer> {
 public:
  enum class Direction { kSend, kRecv };

  // `buffer` has its send or recv already posted.
  Transfer(Direction direction, std::unique_ptr<gloo::transport::UnboundBuffer> buffer,
           std::chrono::milliseconds default_timeout);

  // Caller side (one thread per request, as the ABI requires).
  bool poll(ProgressThread& progress);          // non-blocking; throws if the transfer failed
  void wait(std::chrono::milliseconds timeout);  // negative: the default timeout

  // Progress-thread side.
  void wait_in_background();
  void abort_wait();                      // wakes a blocked wait_in_background()
  void cancel(const std::string& reason);  // never waited for: fail it

 private:
  void finish(std::exception_ptr failure);  // requires mutex_ held
  bool gloo_wait(std::chrono::milliseconds timeout);

  const Direction direction_;
  const std::chrono::milliseconds default_timeout_;
  std::unique_ptr<gloo::transport::UnboundBuffer> buffer_;

  std::mutex mutex_;
  std::condition_variable finished_cv_;
  bool in_background_ = false;  // handed to the progress thread: only it calls gloo_wait
  bool finished_ = false;
  std::exception_ptr failure_;
};

// One per communicator; the thread starts on the first test() of an unfinished transfer.
class ProgressThread {
 public:
  ProgressThread() = default;
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;
  ~ProgressThread();  // aborts the wait in progress, fails queued transfers, joins

  void enqueue(std::shared_ptr<Transfer> transfer);

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Transfer>> queue_;
  std::shared_ptr<Transfer> current_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace commbench::gloo_backend
