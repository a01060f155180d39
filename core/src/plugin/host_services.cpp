#include "plugin/host_services.h"

#include <cstdio>
#include <cstring>
#include <functional>

#include "commbench/sdk/dtypes.hpp"

namespace commbench {
namespace {

Millis to_millis(int32_t timeout_ms) {
  // Negative means "no limit" in the ABI; a day is as good as forever for one bootstrap step.
  return Millis(timeout_ms < 0 ? 24 * 3600 * 1000 : timeout_ms);
}

HostServices* self(void* ctx) { return static_cast<HostServices*>(ctx); }

}  // namespace

HostServices::HostServices(Bootstrap& bootstrap, int local_rank, int local_world,
                           const std::map<std::string, std::string>& options, uint64_t flags)
    : bootstrap_(bootstrap) {
  storage_.reserve(options.size() * 2);
  for (const auto& [k, v] : options) {
    storage_.push_back(k);
    storage_.push_back(v);
  }
  for (size_t i = 0; i < storage_.size(); i += 2)
    options_.push_back(cb_option{CB_STRUCT_SIZE(cb_option, value), storage_[i].c_str(), storage_[i + 1].c_str()});

  services_.struct_size = CB_STRUCT_SIZE(cb_host_services, flags);
  services_.flags = flags;
  services_.ctx = this;
  services_.rank = bootstrap.rank();
  services_.world_size = bootstrap.world_size();
  services_.local_rank = local_rank;
  services_.local_world_size = local_world;
  services_.options = options_.empty() ? nullptr : options_.data();
  services_.num_options = options_.size();
  services_.log = [](void* ctx, cb_log_level level, const char* msg) {
    static const char* names[] = {"error", "warn", "info", "debug"};
    const int32_t raw = sdk::abi_value(level);  // a newer plugin's level is not loaded as the enum
    const int l = raw < 0 || raw > 3 ? 3 : raw;
    std::fprintf(stderr, "[rank %d] plugin %s: %s\n", self(ctx)->bootstrap_.rank(), names[l], msg);
  };
  services_.bootstrap_allgather = [](void* ctx, const void* send, size_t bytes, void* recv,
                                     int32_t timeout_ms) {
    return guard(ctx, [&] { self(ctx)->bootstrap_.allgather(send, bytes, recv, to_millis(timeout_ms)); });
  };
  services_.bootstrap_broadcast = [](void* ctx, void* buf, size_t bytes, int32_t root,
                                     int32_t timeout_ms) {
    return guard(ctx, [&] { self(ctx)->bootstrap_.broadcast(buf, bytes, root, to_millis(timeout_ms)); });
  };
  services_.bootstrap_barrier = [](void* ctx, int32_t timeout_ms) {
    return guard(ctx, [&] { self(ctx)->bootstrap_.barrier(to_millis(timeout_ms)); });
  };
  services_.kv_set = [](void* ctx, const char* key, const void* value, size_t length, int32_t) {
    return guard(ctx, [&] {
      const auto* p = static_cast<const uint8_t*>(value);
      self(ctx)->bootstrap_.kv_set(key, Bytes(p, p + length));
    });
  };
  services_.kv_get = [](void* ctx, const char* key, void* value, size_t capacity, size_t* length,
                        int32_t timeout_ms) {
    return guard(ctx, [&] {
      Bytes v = self(ctx)->bootstrap_.kv_get(key, to_millis(timeout_ms));
      if (length) *length = v.size();
      if (value && capacity) std::memcpy(value, v.data(), std::min(capacity, v.size()));
    });
  };
}

cb_status HostServices::guard(void* ctx, const std::function<void()>& fn) {
  try {
    fn();
    return CB_OK;
  } catch (const StoreError& e) {
    self(ctx)->last_error_ = e.what();
    std::fprintf(stderr, "[rank %d] bootstrap: %s\n", self(ctx)->bootstrap_.rank(), e.what());
    switch (e.code()) {
      case StoreError::Code::Timeout: return CB_ERR_TIMEOUT;
      case StoreError::Code::Connection: return CB_ERR_REMOTE;
      default: return CB_ERR_INTERNAL;
    }
  } catch (const std::exception& e) {
    self(ctx)->last_error_ = e.what();
    std::fprintf(stderr, "[rank %d] bootstrap: %s\n", self(ctx)->bootstrap_.rank(), e.what());
    return CB_ERR_INTERNAL;
  }
}

}  // namespace commbench
