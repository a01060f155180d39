#include "host_store.h"

#include <algorithm>
#include <limits>

#include "errors.h"

namespace commbench::gloo_backend {
namespace {
// gloo's values are address lists, ~130 bytes per rank: most fit in the first read.
constexpr size_t kFirstReadCapacity = 4096;
}  // namespace

HostKvStore::HostKvStore(const cb_host_services& host, std::string prefix,
                         std::chrono::milliseconds timeout)
    : host_(host),
      prefix_(std::move(prefix)),
      unlimited_(timeout.count() < 0),
      timeout_(timeout),
      deadline_(std::chrono::steady_clock::now() + std::max(timeout, std::chrono::milliseconds(0))) {}

int32_t HostKvStore::remaining_ms(std::chrono::milliseconds limit) const {
  using std::chrono::milliseconds;
  const bool limited_by_gloo = limit.count() > 0;
  if (unlimited_ && !limited_by_gloo) return -1;
  milliseconds left = milliseconds::max();
  if (!unlimited_)
    left = std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(
                                         deadline_ - std::chrono::steady_clock::now()));
  if (limited_by_gloo) left = std::min(left, limit);
  return static_cast<int32_t>(std::min<int64_t>(left.count(), std::numeric_limits<int32_t>::max()));
}

void HostKvStore::fail_call(const char* call, const std::string& key, cb_status status) const {
  if (status == CB_ERR_TIMEOUT)
    fail(CB_ERR_TIMEOUT, std::string("rendezvous timed out (comm_create timeout ") +
                             std::to_string(timeout_.count()) + " ms) waiting for key '" + key +
                             "' in the bootstrap store: some rank did not reach comm_create or "
                             "could not publish its address");
  fail(status, std::string("bootstrap ") + call + "('" + key + "') failed with status " +
                   std::to_string(static_cast<int>(status)));
}

void HostKvStore::set(const std::string& key, const std::vector<char>& data) {
  const std::string full_key = prefix_ + key;
  const cb_status status =
      host_.kv_set(host_.ctx, full_key.c_str(), data.data(), data.size(), remaining_ms({}));
  if (status != CB_OK) fail_call("kv_set", full_key, status);
}

std::vector<char> HostKvStore::get(const std::string& key) {
  const std::string full_key = prefix_ + key;
  std::vector<char> value(kFirstReadCapacity);
  size_t length = 0;
  // kv_get always reports the full length: read again with room for all of it if needed
  // (the key exists by then, so the second read does not wait).
  for (int attempt = 0; attempt < 2; ++attempt) {
    const cb_status status = host_.kv_get(host_.ctx, full_key.c_str(), value.data(), value.size(),
                                          &length, remaining_ms({}));
    if (status != CB_OK) fail_call("kv_get", full_key, status);
    if (length <= value.size()) {
      value.resize(length);
      return value;
    }
    value.resize(length);
  }
  fail(CB_ERR_INTERNAL, "bootstrap kv_get('" + full_key + "') kept growing between two reads");
}

void HostKvStore::wait(const std::vector<std::string>& keys) { wait(keys, {}); }

void HostKvStore::wait(const std::vector<std::string>& keys,
                       const std::chrono::milliseconds& timeout) {
  for (const std::string& key : keys) {
    const std::string full_key = prefix_ + key;
    char unused = 0;
    size_t length = 0;
    // Capacity 0: wait for the key to exist without copying its value.
    const cb_status status =
        host_.kv_get(host_.ctx, full_key.c_str(), &unused, 0, &length, remaining_ms(timeout));
    if (status != CB_OK) fail_call("kv_get", full_key, status);
  }
}

}  // namespace commbench::gloo_backend
