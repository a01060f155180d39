#include "ucp_channel.h"

#include "errors.h"
#include "tags.h"

namespace commbench::ucx_backend {

UcpChannel::~UcpChannel() { abandon(); }

void UcpChannel::begin(Deadline deadline, EagerSends eager) {
  abandon();
  ++sequence_;
  deadline_ = deadline;
  eager_ = eager;
}

void UcpChannel::abandon() {
  for (Transfer& t : pending_) tags_.discard(t);
  pending_.clear();
}

Channel::Ticket UcpChannel::post_send(int peer, uint32_t step, const void* buf, size_t bytes) {
  Transfer& t = pending_.emplace_back();
  tags_.start_send(t, peer, collective_tag(sequence_, step, rank_), buf, bytes, eager_.applies(buf, bytes));
  return pending_.size() - 1;
}

Channel::Ticket UcpChannel::post_recv(int peer, uint32_t step, void* buf, size_t bytes) {
  Transfer& t = pending_.emplace_back();
  tags_.start_recv(t, peer, collective_tag(sequence_, step, peer), buf, bytes);
  return pending_.size() - 1;
}

void UcpChannel::wait(Ticket ticket) {
  if (ticket >= pending_.size()) fail(CB_ERR_INTERNAL, "wait for a transfer that was not posted");
  Transfer& t = pending_[ticket];
  if (t.done()) {  // a send UCX finished at once, or a transfer waited for before
    tags_.check(t);
    return;
  }
  // Only this transfer is polled; ucp_worker_progress advances the others meanwhile. On failure
  // the others stay listed, and abandon() releases them.
  tags_.wait_all(std::span<Transfer>(&t, 1), deadline_);
}

void UcpChannel::wait_all() {
  tags_.wait_all(pending_, deadline_);  // on failure it has already released everything
  pending_.clear();
}

}  // namespace commbench::ucx_backend
