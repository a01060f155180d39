#include "ucp_channel.h"

#include "errors.h"
#include "tags.h"

namespace commbench::ucx_backend {

UcpChannel::~UcpChannel() { abandon(); }

void UcpChannel::begin(Clock::time_point deadline) {
  abandon();
  ++sequence_;
  deadline_ = deadline;
}

void UcpChannel::abandon() {
  for (Transfer& t : pending_) tags_.discard(t);
  pending_.clear();
}

void UcpChannel::post_send(int peer, uint32_t step, const void* buf, size_t bytes) {
  if (pending_.size() == pending_.capacity()) fail(CB_ERR_INTERNAL, "too many transfers posted in one round");
  Transfer& t = pending_.emplace_back();
  tags_.start_send(t, peer, collective_tag(sequence_, step, rank_), buf, bytes);
}

void UcpChannel::post_recv(int peer, uint32_t step, void* buf, size_t bytes) {
  if (pending_.size() == pending_.capacity()) fail(CB_ERR_INTERNAL, "too many transfers posted in one round");
  Transfer& t = pending_.emplace_back();
  tags_.start_recv(t, peer, collective_tag(sequence_, step, peer), buf, bytes);
}

void UcpChannel::wait_all() {
  tags_.wait_all(pending_, deadline_);  // on failure it has already released everything
  pending_.clear();
}

}  // namespace commbench::ucx_backend
