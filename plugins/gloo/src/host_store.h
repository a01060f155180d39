// gloo's rendezvous store, backed by the host's key/value services (cb_host_services.kv_*).
// gloo's full-mesh connect publishes every rank's listening addresses through it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include <gloo/rendezvous/store.h>

#include "commbench/backend.h"

namespace commbench::gloo_backend {

class HostKvStore : public gloo::rendezvous::Store {
 public:
  // `prefix` keeps the keys of different communicators apart (see communicator.cpp).
  // Every call waits at most until `deadline`; a negative `timeout` means no limit.
  HostKvStore(const cb_host_services& host, std::string prefix, std::chrono::milliseconds timeout);

  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  // Milliseconds left for one host call, bounded by `limit` (gloo's own timeout for the call).
  int32_t remaining_ms(std::chrono::milliseconds limit) const;
  [[noreturn]] void fail_call(const char* call, const std::string& key, cb_status status) const;

  const cb_host_services& host_;
  std::string prefix_;
  bool unlimited_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace commbench::gloo_backend
