// The cb_host_services a worker hands to its plugin: logging to the worker's log, the run's
// options as C strings, and bootstrap collectives over the store. Converts exceptions into
// cb_status codes because nothing may unwind across the C ABI.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "bootstrap/collectives.h"
#include "commbench/backend.h"

namespace commbench {

class HostServices {
 public:
  // `flags`: CB_HOST_* (1.3), e.g. CB_HOST_SHARED_DEVICE when the run set oversubscribe_gpu.
  HostServices(Bootstrap& bootstrap, int local_rank, int local_world,
               const std::map<std::string, std::string>& options, uint64_t flags = 0);
  HostServices(const HostServices&) = delete;
  HostServices& operator=(const HostServices&) = delete;

  const cb_host_services* get() const { return &services_; }
  Bootstrap& bootstrap() { return bootstrap_; }
  // The last bootstrap failure's message (the status code alone loses it).
  const std::string& last_error() const { return last_error_; }

 private:
  static cb_status guard(void* ctx, const std::function<void()>& fn);
  Bootstrap& bootstrap_;
  std::vector<std::string> storage_;  // owns option keys and values
  std::vector<cb_option> options_;
  cb_host_services services_{};
  std::string last_error_;
};

}  // namespace commbench
