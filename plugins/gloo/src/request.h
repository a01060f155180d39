// A posted op. Collectives finish inside post() and yield a request that is already complete;
// send/recv carry their transfer, still in flight.
#pragma once

#include <memory>

#include "transfer.h"

struct cb_request {
  std::shared_ptr<commbench::gloo_backend::Transfer> transfer;  // null: complete at post
  commbench::gloo_backend::ProgressThread* progress = nullptr;  // the communicator's
};
