#include "fault_backend.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "commbench/sdk/op_args.hpp"
#include "commbench/sdk/plugin_error.hpp"

// The ABI declares these as incomplete C structs; the plugin gives them their bodies (cb_error:
// the SDK's, from plugin_error.hpp).
struct cb_backend {
  const cb_host_services* host;
  int32_t op_timeout_ms = 0;  // option `timeout_ms` (every fault plugin): caps each op's waits; 0 = the comm's
};
struct cb_comm {
  cb_backend* backend;
  int32_t timeout_ms;  // from comm_create, used for every bootstrap call of an op
  uint64_t posts = 0;
};
struct cb_request {
  int64_t done_at_ns = -1;  // CLOCK_MONOTONIC; -1: complete (ops finish inside post())
};

namespace cbtest {
namespace {

cb_error* make_error(cb_status code, const std::string& message) {
  return commbench::sdk::make_error(code, std::string(kPluginName) + ": " + message);
}

cb_error* host_error(cb_status status, const char* call) {
  if (status == CB_OK) return nullptr;
  return make_error(status, std::string("host ") + call + " failed");
}

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

cb_request g_done_request;  // every post completes synchronously: one shared finished request

cb_status err_code(const cb_error* e) { return e->code; }
const char* err_message(const cb_error* e) { return e->message.c_str(); }
void err_destroy(cb_error* e) { commbench::sdk::destroy_error(e); }

cb_capabilities capabilities() {
  cb_capabilities caps{};
  caps.ops = CB_BIT(CB_OP_ALLREDUCE) | CB_BIT(CB_OP_BARRIER);
  caps.dtypes = CB_BIT(CB_DTYPE_F32);
  caps.reduce_dtypes = CB_BIT(CB_DTYPE_F32);
  caps.redops = CB_BIT(CB_REDOP_SUM);
  caps.mem_types = CB_BIT(CB_MEM_HOST);
  caps.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE | (posts_are_async() ? CB_CAP_ASYNC : 0);
  return caps;
}

cb_error* get_capabilities(const cb_backend*, cb_capabilities* out) {
  if (out == nullptr) return make_error(CB_ERR_INVALID_ARGUMENT, "get_capabilities: out is NULL");
  // Write only the fields the host's struct has room for (it may be an older host), and leave
  // its struct_size alone.
  const cb_capabilities caps = capabilities();
  const size_t keep = out->struct_size;
  std::memcpy(out, &caps, std::min(out->struct_size, CB_STRUCT_SIZE(cb_capabilities, flags)));
  out->struct_size = keep;
  return nullptr;
}

cb_error* init(const cb_host_services* host, cb_backend** out) {
  if (host == nullptr || out == nullptr) return make_error(CB_ERR_INVALID_ARGUMENT, "init: host or out is NULL");
  Options options;
  for (size_t i = 0; i < host->num_options; ++i) {
    const cb_option& o = host->options[i];
    // Every fault plugin's per-op limit, as real plugins have; `timeout_ms_rank<R>` for one rank.
    bool known = std::string(o.key) == "timeout_ms" || std::string(o.key).rfind("timeout_ms_rank", 0) == 0;
    for (const auto& k : kOptionKeys) known = known || k == o.key;
    if (!known) {
      std::string list;
      for (const auto& k : kOptionKeys) list += (list.empty() ? "" : ", ") + k;
      return make_error(CB_ERR_INVALID_ARGUMENT,
                        std::string("unknown option '") + o.key + "' (known: " + list + ")");
    }
    options[o.key] = o.value;
  }
  int64_t op_timeout_ms = 0;
  try {
    op_timeout_ms = int_option(options, "timeout_ms", 0);
    op_timeout_ms = int_option(options, "timeout_ms_rank" + std::to_string(host->rank), op_timeout_ms);
    for (auto it = options.begin(); it != options.end();)
      it = it->first.rfind("timeout_ms_rank", 0) == 0 ? options.erase(it) : std::next(it);
    if (op_timeout_ms < 0 || op_timeout_ms > INT32_MAX) throw std::invalid_argument("timeout_ms must be in 0..2147483647");
    options.erase("timeout_ms");
    configure(options, *host);
  } catch (const std::invalid_argument& e) {
    return make_error(CB_ERR_INVALID_ARGUMENT, e.what());
  }
  *out = new cb_backend{host, static_cast<int32_t>(op_timeout_ms)};
  return nullptr;
}

cb_error* finalize(cb_backend* backend) {
  delete backend;
  return nullptr;
}

cb_error* comm_create(cb_backend* backend, int32_t timeout_ms, cb_comm** out) {
  // Collective by contract: a barrier proves every rank got this far.
  if (backend == nullptr || out == nullptr) return make_error(CB_ERR_INVALID_ARGUMENT, "comm_create: backend or out is NULL");
  const cb_host_services* h = backend->host;
  if (cb_error* e = host_error(h->bootstrap_barrier(h->ctx, timeout_ms), "bootstrap_barrier")) return e;
  static uint64_t created = 0;
  try {
    on_comm_create(*h, created++);
  } catch (const InjectedError& injected) {
    return make_error(injected.status, injected.message);
  }
  const int32_t op = backend->op_timeout_ms > 0 && (timeout_ms < 0 || backend->op_timeout_ms < timeout_ms)
                       ? backend->op_timeout_ms : timeout_ms;
  *out = new cb_comm{backend, op};
  return nullptr;
}

cb_error* comm_destroy(cb_comm* comm) {
  delete comm;
  return nullptr;
}

// allgather every rank's vector, then sum in rank order (identical result on every rank).
cb_error* allreduce_f32(cb_comm* comm, const cb_op_args& a) {
  const cb_host_services* h = comm->backend->host;
  if (collectives_are_local()) {
    if (a.recvbuf != a.sendbuf) std::memcpy(a.recvbuf, a.sendbuf, a.count * sizeof(float));
    after_allreduce(*h, static_cast<float*>(a.recvbuf), a.count);
    return nullptr;
  }
  const size_t bytes = a.count * sizeof(float);
  std::vector<float> all(a.count * static_cast<size_t>(h->world_size));
  if (cb_error* e = host_error(
          h->bootstrap_allgather(h->ctx, a.sendbuf, bytes, all.data(), comm->timeout_ms),
          "bootstrap_allgather"))
    return e;
  auto* recv = static_cast<float*>(a.recvbuf);
  for (size_t i = 0; i < a.count; ++i) {
    float sum = 0;
    for (int32_t r = 0; r < h->world_size; ++r) sum += all[static_cast<size_t>(r) * a.count + i];
    recv[i] = sum;
  }
  after_allreduce(*h, recv, a.count);
  return nullptr;
}

cb_error* post(cb_comm* comm, const cb_op_args* given, cb_request** out) {
  if (comm == nullptr || given == nullptr || out == nullptr)
    return make_error(CB_ERR_INVALID_ARGUMENT, "post: comm, args and out must not be NULL");
  cb_op_args checked;
  try {
    const cb_host_services& h = *comm->backend->host;
    checked = commbench::sdk::checked_op_args(*given, h.rank, h.world_size, capabilities());
  } catch (const commbench::sdk::PluginError& e) {
    return make_error(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return make_error(CB_ERR_RESOURCE_EXHAUSTED, "out of memory in post");
  }
  const cb_op_args* args = &checked;
  try {
    before_post(*comm->backend->host, comm->posts++);
  } catch (const InjectedError& injected) {
    return make_error(injected.status, injected.message);
  }
  try {
    cb_error* e = nullptr;
    if (args->op == CB_OP_BARRIER) {
      const cb_host_services* h = comm->backend->host;
      e = host_error(h->bootstrap_barrier(h->ctx, comm->timeout_ms), "bootstrap_barrier");
    } else if (args->op == CB_OP_ALLREDUCE && args->dtype == CB_DTYPE_F32 &&
               args->redop == CB_REDOP_SUM && args->mem_type == CB_MEM_HOST) {
      e = allreduce_f32(comm, *args);
    } else {
      return make_error(CB_ERR_UNIMPLEMENTED, "only f32 sum allreduce and barrier on host memory");
    }
    if (e != nullptr) return e;
    const int64_t done_at = args->op == CB_OP_ALLREDUCE ? async_completion_ns() : -1;
    *out = done_at >= 0 ? new cb_request{done_at} : &g_done_request;
  } catch (const std::bad_alloc&) {
    return make_error(CB_ERR_RESOURCE_EXHAUSTED, "out of memory in post");
  }
  return nullptr;
}

cb_error* test(cb_request* request, int32_t* done) {
  if (request == nullptr || done == nullptr) return make_error(CB_ERR_INVALID_ARGUMENT, "test: request or done is NULL");
  *done = request->done_at_ns < 0 || monotonic_ns() >= request->done_at_ns ? 1 : 0;
  return nullptr;
}
cb_error* wait(cb_request* request, int32_t) {
  if (request == nullptr) return make_error(CB_ERR_INVALID_ARGUMENT, "wait: request is NULL");
  if (request->done_at_ns >= 0) {
    timespec ts{static_cast<time_t>(request->done_at_ns / 1'000'000'000), static_cast<long>(request->done_at_ns % 1'000'000'000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
    }
  }
  return nullptr;
}
void request_free(cb_request* request) {
  if (request != &g_done_request) delete request;
}

cb_error* get_metadata(const cb_backend*, void (*emit)(void*, const char*, const char*), void* ctx) {
  emit(ctx, "transport", "commbench bootstrap store (test plugin)");
  return nullptr;
}

}  // namespace

int64_t int_option(const Options& options, const std::string& key, int64_t fallback) {
  auto it = options.find(key);
  if (it == options.end()) return fallback;
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != it->second.size())
    throw std::invalid_argument("option " + key + "='" + it->second + "' is not an integer");
  return value;
}

__attribute__((weak)) bool collectives_are_local() { return false; }
__attribute__((weak)) bool posts_are_async() { return false; }
__attribute__((weak)) int64_t async_completion_ns() { return -1; }
__attribute__((weak)) void on_comm_create(const cb_host_services&, uint64_t) {}

}  // namespace cbtest

// A library constructor that prints (CBTEST_LIBRARY_NOISE=print): conformance says so without
// failing, since a plugin's dependencies may do that out of its author's hands.
__attribute__((constructor)) static void library_noise() {
  if (const char* noise = std::getenv("CBTEST_LIBRARY_NOISE"); noise && std::string_view(noise) == "print")
    std::fprintf(stderr, "fault backend library: hello from a constructor\n");
}

extern "C" CB_EXPORT const cb_backend_api* commbench_backend_v1(void) {
  using namespace cbtest;
  static const cb_backend_api api = [] {
    cb_backend_api a{};
    // A 1.0 table on purpose (no option descriptors): the core must accept an older plugin's
    // shorter table and treat its options as undescribed.
    a.struct_size = CB_STRUCT_SIZE(cb_backend_api, group_end);
    a.abi_major = CB_ABI_MAJOR;
    a.abi_minor = 0;
    // A table whose abi_minor disagrees with its struct_size, which conformance must fail.
    if (const char* minor = std::getenv("CBTEST_TABLE_ABI_MINOR")) a.abi_minor = static_cast<uint32_t>(std::atoi(minor));
    // An entry function that is not pure (conformance's "load quietly" must fail it): "print"
    // writes a banner, "thread" leaves a thread running.
    if (const char* noise = std::getenv("CBTEST_ENTRY_NOISE")) {
      if (std::string_view(noise) == "print") std::printf("fault backend: hello from the entry function\n");
      if (std::string_view(noise) == "thread") std::thread([] { for (;;) std::this_thread::sleep_for(std::chrono::hours(1)); }).detach();
    }
    a.name = kPluginName;
    a.version = "1.0";
    a.description = kPluginDescription;
    a.error_code = err_code;
    a.error_message = err_message;
    a.error_destroy = err_destroy;
    a.get_capabilities = get_capabilities;
    a.init = init;
    a.finalize = finalize;
    a.get_metadata = get_metadata;
    a.comm_create = comm_create;
    a.comm_destroy = comm_destroy;
    a.post = post;
    a.test = test;
    a.wait = wait;
    a.request_free = request_free;
    return a;
  }();
  return &api;
}
