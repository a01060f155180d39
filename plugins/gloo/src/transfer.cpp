#include "transfer.h"

#include "errors.h"

namespace commbench::gloo_backend {

Transfer::Transfer(Direction direction, std::unique_ptr<gloo::transport::UnboundBuffer> buffer,
                   std::chrono::milliseconds default_timeout)
    : direction_(direction), default_timeout_(default_timeout), buffer_(std::move(buffer)) {}

bool Transfer::gloo_wait(std::chrono::milliseconds timeout) {
  return direction_ == Direction::kSend ? buffer_->waitSend(timeout) : buffer_->waitRecv(timeout);
}

void Transfer::finish(std::exception_ptr failure) {
  finished_ = true;
  failure_ = std::move(failure);
  finished_cv_.notify_all();
}

bool Transfer::poll(ProgressThread& progress) {
  std::unique_lock lock(mutex_);
  if (finished_) {
    if (failure_) std::rethrow_exception(failure_);
    return true;
  }
  if (!in_background_) {
    in_background_ = true;
    lock.unlock();
    progress.enqueue(shared_from_this());
  }
  return false;
}

void Transfer::wait(std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) timeout = default_timeout_;
  std::unique_lock lock(mutex_);
  if (!finished_ && !in_background_) {
    // Nobody else waits on this buffer: wait here, without the lock, which the progress
    // thread never needs for a transfer it was not handed.
    lock.unlock();
    std::exception_ptr failure;
    try {
      if (!gloo_wait(timeout))
        fail(CB_ERR_REMOTE, "the transfer was aborted (its communicator is being torn down)");
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    finish(failure);
  } else if (!finished_cv_.wait_for(lock, timeout, [&] { return finished_; })) {
    fail(CB_ERR_TIMEOUT, "transfer not complete after " + std::to_string(timeout.count()) +
                             " ms; check that the peer posts the matching send/recv with the same tag");
  }
  if (failure_) std::rethrow_exception(failure_);
}

void Transfer::wait_in_background() {
  std::exception_ptr failure;
  try {
    if (!gloo_wait(default_timeout_))
      fail(CB_ERR_REMOTE, "the transfer was aborted (its communicator is being torn down)");
  } catch (...) {
    failure = std::current_exception();
  }
  std::lock_guard lock(mutex_);
  finish(failure);
}

void Transfer::abort_wait() {
  // gloo keeps the abort flag until a wait consumes it, so this works whether or not the
  // progress thread has entered its wait yet.
  if (direction_ == Direction::kSend)
    buffer_->abortWaitSend();
  else
    buffer_->abortWaitRecv();
}

void Transfer::cancel(const std::string& reason) {
  std::lock_guard lock(mutex_);
  if (!finished_) finish(std::make_exception_ptr(PluginError(CB_ERR_REMOTE, reason)));
}

ProgressThread::~ProgressThread() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    if (current_) current_->abort_wait();
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  for (const auto& transfer : queue_) transfer->cancel("the communicator was destroyed before this transfer completed");
}

void ProgressThread::enqueue(std::shared_ptr<Transfer> transfer) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(transfer));
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  wake_.notify_one();
}

void ProgressThread::run() {
  for (;;) {
    std::shared_ptr<Transfer> transfer;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      transfer = current_ = std::move(queue_.front());
      queue_.pop_front();
    }
    // Transfers complete in gloo's I/O thread in any order; waiting for them in queue order
    // only delays noticing a later one, never its progress.
    transfer->wait_in_background();
    std::lock_guard lock(mutex_);
    current_.reset();
  }
}

}  // namespace commbench::gloo_backend
