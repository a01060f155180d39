// StoreServer: one background thread running an epoll loop over non-blocking sockets. Blocking
// GET/MULTI_GET requests are parked in StoreState until their keys appear or their deadline
// passes; nothing is polled. Per connection at most one request is executed at a time (the
// next is parsed only after the previous reply is fully written), which bounds every buffer:
// input by max_message_bytes + 4 (4 KiB + 4 before the client authenticated), output by one
// reply; all input together by max_buffered_bytes plus one message.
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "bootstrap/byte_codec.h"
#include "bootstrap/tcp_store_server.h"

namespace commbench {
namespace store_server_detail {

TcpStoreServer::TcpStoreServer(const StoreServerOptions& opts)
    : opts_(opts),
      pending_(opts.max_unauthenticated, opts.auth_timeout,
               [this](ConnId id) {
                 auto it = conns_.find(id);
                 return it != conns_.end() && !it->second->authenticated();
               }),
      budget_(opts.max_buffered_bytes) {
  // The length field is a u32: a larger limit means no limit beyond that.
  opts_.max_message_bytes = std::min<size_t>(opts_.max_message_bytes, UINT32_MAX);
  input_cap_ = opts_.max_message_bytes + wire::kFrameHeaderBytes;
  rlimit nofile{};
  const rlim_t limit = ::getrlimit(RLIMIT_NOFILE, &nofile) == 0 ? nofile.rlim_cur : 1024;
  fd_ceiling_ = static_cast<int>(std::min<rlim_t>(limit, INT32_MAX)) - std::max(opts_.reserved_fds, 0);
  listen_fd_ = listen_tcp(opts_.bind_host, opts_.port);
  port_ = bound_port(listen_fd_.get());
  epoll_fd_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  wake_fd_ = UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_fd_.valid() || !wake_fd_.valid()) {
    throw StoreError(StoreError::Code::Connection,
                     "bootstrap store cannot create its event loop: " + errno_text(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev);
  ev.data.u64 = kWakeId;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev);
  thread_ = std::thread([this] { run(); });
  clockid_t clock{};
  if (::pthread_getcpuclockid(thread_.native_handle(), &clock) == 0) loop_clock_ = clock;
}

std::chrono::nanoseconds TcpStoreServer::cpu_time() const {
  timespec ts{};
  if (stopping_.load() || !loop_clock_ || ::clock_gettime(*loop_clock_, &ts) != 0) return {};
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

void TcpStoreServer::stop() {
  std::call_once(stop_once_, [this] {
    stopping_ = true;
    const uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_fd_.get(), &one, sizeof(one));
    if (thread_.joinable()) thread_.join();
    // The loop has ended: what its last window held back is said here.
    if (auto summary = log_limiter_.held_back_summary()) write_log(*summary);
  });
}

void TcpStoreServer::set_shared(const std::string& key, std::shared_ptr<const Bytes> value) {
  {
    std::lock_guard<std::mutex> lock(local_sets_mutex_);
    local_sets_.emplace_back(key, std::move(value));
  }
  const uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(wake_fd_.get(), &one, sizeof(one));
}

void TcpStoreServer::apply_local_sets() {
  uint64_t count = 0;
  [[maybe_unused]] auto n = ::read(wake_fd_.get(), &count, sizeof(count));  // re-arm the eventfd
  std::vector<std::pair<std::string, StoreState::Value>> sets;
  {
    std::lock_guard<std::mutex> lock(local_sets_mutex_);
    sets.swap(local_sets_);
  }
  std::vector<StoreState::WaiterId> woken;
  for (auto& [key, value] : sets) state_.set_shared(key, std::move(value), woken);
  key_count_.store(state_.key_count(), std::memory_order_relaxed);
  finish_woken(woken);
}

void TcpStoreServer::log(const std::string& message) {
  const LogLimiter::Verdict v = log_limiter_.admit(LogLimiter::Clock::now());
  if (v.summary) write_log(*v.summary);
  if (v.print) write_log(message);
}

void TcpStoreServer::write_log(const std::string& message) const {
  if (opts_.log) {
    opts_.log(message);
  } else {
    std::fprintf(stderr, "[commbench store %s] %s\n",
                 format_endpoint(opts_.bind_host, port_).c_str(), message.c_str());
  }
}

int TcpStoreServer::wait_timeout_ms() const {
  std::optional<Clock::time_point> next = state_.next_deadline();
  if (accept_paused_until_ && (!next || *accept_paused_until_ < *next)) next = accept_paused_until_;
  if (const auto when = pending_.next_wakeup(); when && (!next || *when < *next)) next = when;
  if (!next) return -1;
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, INT32_MAX));
}

void TcpStoreServer::run() {
  std::vector<epoll_event> events(256);
  while (!stopping_) {
    const int n = ::epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()),
                               wait_timeout_ms());
    if (n < 0 && errno != EINTR) {
      write_log("event loop failed: " + errno_text(errno) + "; the store stops serving");  // never held back
      break;
    }
    for (int i = 0; i < n; ++i) on_event(events[i].data.u64, events[i].events);
    expire_waiters();
    expire_unauthenticated();
    if (accept_paused_until_ && Clock::now() >= *accept_paused_until_) accept_paused_until_.reset();
    update_accepting();
    rearm_throttled();
    buffered_seen_.store(budget_.held(), std::memory_order_relaxed);
    while (!resume_.empty()) {
      auto it = conns_.find(resume_.front());
      resume_.pop_front();
      if (it != conns_.end()) process_input(*it->second);
    }
  }
  // Closing every socket is what tells waiting clients the store is gone.
  conns_.clear();
  listen_fd_.reset();
}

void TcpStoreServer::on_event(ConnId id, uint32_t events) {
  if (id == kListenId) return accept_all();
  if (id == kWakeId) return apply_local_sets();  // or stop(): the loop condition sees stopping_
  auto it = conns_.find(id);
  if (it == conns_.end()) return;  // closed earlier in this round
  StoreConnection& c = *it->second;
  if (events & (EPOLLERR | EPOLLHUP)) return close_connection(id);
  if (events & EPOLLOUT) {
    flush(c);
    if (!conns_.contains(id)) return;
  }
  if (events & EPOLLIN) {
    read_input(c);
  } else if (events & EPOLLRDHUP) {
    close_connection(id);  // peer left while we were not reading from it (parked or backlogged)
  }
}

void TcpStoreServer::accept_all() {
  while (true) {
    // Clients that have not authenticated are capped. Past the cap, the oldest of them that has
    // had a second to authenticate makes room (a real client does so within two round trips of
    // connecting; what stays is someone holding sockets open); when none has, new clients wait
    // in the kernel's backlog, costing this process nothing, until one has.
    if (pending_.full()) {
      const auto stale = pending_.take_evictable();
      if (!stale) return update_accepting();
      log(fmt::format("closing connection from {}: {} clients are authenticating at once and this one has "
                      "not, {} ms after connecting",
                      conns_.at(*stale)->peer, opts_.max_unauthenticated,
                      PendingAuthentications::kEvictionGrace.count()));
      close_connection(*stale);
    }
    const int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      if (errno == ECONNABORTED) continue;
      return pause_accepting(errno);
    }
    if (fd >= fd_ceiling_) {  // the last descriptors are the agent's, for its own workers
      ::close(fd);
      return pause_accepting(EMFILE);
    }
    set_nodelay(fd);
    const ConnId id = next_id_++;
    auto c = std::make_unique<StoreConnection>();
    c->id = id;
    c->fd = UniqueFd(fd);
    c->peer = peer_name(fd);
    pending_.add(id);
    update_interest(*conns_.emplace(id, std::move(c)).first->second);
  }
}

void TcpStoreServer::pause_accepting(int err) {
  // Level-triggered epoll would report the pending connection again at once: stop listening
  // for a moment instead of spinning (EMFILE clears when some connection closes).
  log(fmt::format("cannot accept a connection: {} ({} open, {} descriptors kept free for this "
                  "process's workers); raise the open-file limit (ulimit -n) for runs with many ranks",
                  errno_text(err), conns_.size(), opts_.reserved_fds));
  accept_paused_until_ = Clock::now() + kAcceptPauseOnEmfile;
  update_accepting();
}

void TcpStoreServer::update_accepting() {
  const bool want = !accept_paused_until_ && (!pending_.full() || pending_.evictable());
  if (want == accepting_) return;
  epoll_event ev{};
  ev.events = want ? static_cast<uint32_t>(EPOLLIN) : 0u;
  ev.data.u64 = kListenId;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, listen_fd_.get(), &ev);
  accepting_ = want;
}

void TcpStoreServer::expire_unauthenticated() {
  for (ConnId id : pending_.take_expired()) {
    log(fmt::format("closing connection from {}: it did not authenticate within {} ms", conns_.at(id)->peer,
                    opts_.auth_timeout.count()));
    close_connection(id);
  }
}

size_t TcpStoreServer::input_cap(const StoreConnection& c) const {
  return c.authenticated() ? input_cap_ : wire::kMaxUnauthenticatedMessage + wire::kFrameHeaderBytes;
}

bool TcpStoreServer::may_read(StoreConnection& c) {
  if (c.buffered_input() >= input_cap(c) || c.close_after_flush) return false;
  return budget_.may_read(c.id, [this](ConnId id) { return conns_.contains(id); });
}

void TcpStoreServer::rearm_throttled() {
  for (ConnId id : budget_.take_waiting([this](ConnId other) { return conns_.contains(other); }))
    if (auto it = conns_.find(id); it != conns_.end()) update_interest(*it->second);
}

void TcpStoreServer::read_input(StoreConnection& c) {
  const ConnId id = c.id;
  size_t read_now = 0;
  while (read_now < kMaxReadPerWakeup && may_read(c)) {
    const size_t want = std::min(read_scratch_.size(), input_cap(c) - c.buffered_input());
    const ssize_t n = ::recv(c.fd.get(), read_scratch_.data(), want, 0);
    if (n == 0) {  // peer closed
      if (c.auth == StoreConnection::Auth::AwaitProof)
        log(fmt::format("rejected client {}: it left after HELLO without proving that it knows the job's "
                        "token (a client with another token refuses this store's proof and leaves)", c.peer));
      return close_connection(id);
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return close_connection(id);
    }
    if (c.in_begin > 0 && c.in_begin * 2 >= c.in.size()) {  // drop consumed bytes first
      c.in.erase(c.in.begin(), c.in.begin() + static_cast<ptrdiff_t>(c.in_begin));
      c.in_begin = 0;
    }
    c.in.insert(c.in.end(), read_scratch_.begin(), read_scratch_.begin() + n);
    read_now += static_cast<size_t>(n);
    budget_.add(static_cast<size_t>(n));
    process_input(c);
    if (!conns_.contains(id)) return;
  }
  update_interest(c);
}

void TcpStoreServer::process_input(StoreConnection& c) {
  const ConnId id = c.id;
  while (!c.busy()) {
    std::span<const uint8_t> pending(c.in.data() + c.in_begin, c.buffered_input());
    // Before authentication only HELLO and AUTH can come: a few KiB at most.
    auto result = wire::parse_request(
        pending, c.authenticated() ? opts_.max_message_bytes : wire::kMaxUnauthenticatedMessage);
    if (std::holds_alternative<wire::NeedMore>(result)) break;
    if (auto* err = std::get_if<wire::ParseError>(&result)) {
      log(fmt::format("closing connection from {}: {}", c.peer, err->message));
      return close_connection(id);
    }
    auto& parsed = std::get<wire::Parsed<wire::Request>>(result);
    c.in_begin += parsed.consumed;
    budget_.remove(parsed.consumed);
    budget_.done(id);  // its message is complete
    execute(c, std::move(parsed.message));
    if (!conns_.contains(id)) return;
  }
  if (c.in_begin == c.in.size()) {
    c.in.clear();
    c.in_begin = 0;
    if (c.in.capacity() > kServerKeepBufferCapacity) wire::Bytes().swap(c.in);  // after a large SET
  }
  update_interest(c);
}

void TcpStoreServer::flush(StoreConnection& c) {
  while (c.output_pending()) {
    const wire::Bytes& head = c.output();
    iovec iov[2];
    int parts = 0;
    if (c.out_begin < head.size()) {
      iov[parts++] = {const_cast<uint8_t*>(head.data()) + c.out_begin, head.size() - c.out_begin};
    }
    if (c.out_value) {
      const size_t sent = c.out_begin > head.size() ? c.out_begin - head.size() : 0;
      iov[parts++] = {const_cast<uint8_t*>(c.out_value->data()) + sent, c.out_value->size() - sent};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(parts);
    const ssize_t n = ::sendmsg(c.fd.get(), &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return close_connection(c.id);
    }
    c.out_begin += static_cast<size_t>(n);
  }
  if (!c.output_pending()) {
    if (c.close_after_flush) return close_connection(c.id);
    c.out_begin = 0;
    c.out.clear();
    c.shared_out.reset();
    c.out_value.reset();
    resume_.push_back(c.id);  // a backlogged request may now run
  }
  update_interest(c);
}

void TcpStoreServer::update_interest(StoreConnection& c) {
  uint32_t want = EPOLLRDHUP;
  if (may_read(c)) want |= EPOLLIN;
  if (c.output_pending()) want |= EPOLLOUT;
  if (want == c.interest) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c.id;
  ::epoll_ctl(epoll_fd_.get(), c.interest == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd.get(), &ev);
  c.interest = want;
}

void TcpStoreServer::close_connection(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  StoreConnection& c = *it->second;
  if (c.parked_op) state_.cancel(id);
  if (!c.authenticated()) pending_.left(id);
  budget_.remove(c.buffered_input());
  budget_.done(id);
  conns_.erase(it);  // closing the fd also removes it from the epoll set
}

}  // namespace store_server_detail

std::unique_ptr<StoreServer> StoreServer::start(const StoreServerOptions& opts) {
  return std::make_unique<store_server_detail::TcpStoreServer>(opts);
}

}  // namespace commbench
