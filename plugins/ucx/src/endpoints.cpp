#include "endpoints.h"

#include "errors.h"

namespace commbench::ucx_backend {

Endpoints::Endpoints(Worker& worker, std::vector<std::vector<unsigned char>> addresses,
                     ErrorHandling mode)
    : worker_(worker), addresses_(std::move(addresses)), mode_(mode) {
  endpoints_.assign(addresses_.size(), nullptr);
  failures_.reserve(addresses_.size());
  for (size_t i = 0; i < addresses_.size(); ++i)
    failures_.push_back(std::make_unique<PeerFailure>(PeerFailure{this, static_cast<int>(i)}));
}

Endpoints::~Endpoints() {
  try {
    close_all(mode_ == ErrorHandling::kPeer, Clock::now() + std::chrono::seconds(1));
  } catch (...) {
    // Destructors do not report; the worker is destroyed next either way.
  }
}

void Endpoints::on_error(void* arg, ucp_ep_h /*ep*/, ucs_status_t status) {
  auto* failure = static_cast<PeerFailure*>(arg);
  if (failure->status == UCS_OK) ++failure->owner->failed_count_;
  failure->status = status;
}

ucp_ep_h Endpoints::connect(int peer) {
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  params.address = reinterpret_cast<const ucp_address_t*>(addresses_[static_cast<size_t>(peer)].data());
  if (mode_ == ErrorHandling::kPeer) {
    params.field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = &Endpoints::on_error;
    params.err_handler.arg = failures_[static_cast<size_t>(peer)].get();
  }
  ucp_ep_h ep = nullptr;
  check_ucs("ucp_ep_create to rank " + std::to_string(peer),
            ucp_ep_create(worker_.get(), &params, &ep),
            "the peer's worker address was not usable from here; check the transports option");
  endpoints_[static_cast<size_t>(peer)] = ep;
  return ep;
}

void Endpoints::connect_all(int self) {
  for (int peer = 0; peer < size(); ++peer)
    if (peer != self) get(peer);
}

void Endpoints::close_all(bool force, Clock::time_point deadline) {
  std::vector<void*> pending;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
  for (ucp_ep_h& ep : endpoints_) {
    if (ep == nullptr) continue;
    ucs_status_ptr_t r = ucp_ep_close_nbx(ep, &param);
    ep = nullptr;
    if (UCS_PTR_IS_PTR(r)) pending.push_back(r);
  }
  Deadline until = deadline;
  worker_.progress_until(
      [&] {
        for (void*& r : pending) {
          if (r != nullptr && ucp_request_check_status(r) != UCS_INPROGRESS) {
            ucp_request_free(r);
            r = nullptr;
          }
        }
        for (void* r : pending)
          if (r != nullptr) return false;
        return true;
      },
      until);
  // Closes still pending at the deadline are released; UCX finishes them with the worker.
  for (void* r : pending)
    if (r != nullptr) ucp_request_free(r);
}

}  // namespace commbench::ucx_backend
