// Test plugin "faulty": every op of ABI 1.0 for every dtype and reduce op on host memory —
// collectives computed locally after a bootstrap allgather of every rank's send buffer, send/recv
// through the bootstrap key/value store — with one deliberate bug chosen by an option. Each bug is one the result check must catch
// (docs/metrics.md, "Correctness checks"); with fault = "none" it is a correct backend, which the
// check must pass.
//
// Options ([run.options.faulty] in an experiment):
//   fault = "none" (default)
//         | "zeros"          every result is all zero bytes
//         | "max_for_prod"   prod computes max
//         | "stale"          results are written by the first `good_posts` collectives only;
//                            later ones leave the receive buffer as it was
//         | "nonroot_write"  reduce and gather also write the result into non-roots' buffers
//         | "rotate"         data movement (collectives and recv) delivers each block rotated by
//                            `rotate` elements
//         | "avg_rounding"   avg rounded the wrong way: floats truncated to an integer, integers
//                            rounded to nearest (the ABI: integers truncate, floats do not)
//         | "chunk"          a chunking bug: of a result (or received message) larger than
//                            `chunk_bytes`, only the first `chunk_bytes` are written — right up
//                            to that size, wrong past it
//         | "overflow"       collectives and receives write `overflow_bytes` bytes of zeros past
//                            the end of the receive buffer (a count or size bug), the result
//                            itself right
//         | "underflow"      collectives and receives write `overflow_bytes` bytes of zeros just
//                            before the start of the receive buffer (an offset bug), the result
//                            itself right
//         | "clobber_send"   out of place, the send buffer is zeroed after it was read (the ABI's
//                            send buffers are read-only), the result itself right
//         | "repeat_stale"   a collective with the same op, buffers, count and dtype as the one
//                            before it leaves its last result element unwritten (a stale cache):
//                            right on a first call, wrong on a second
//         | "cache"          a collective with the same op, buffers, count and dtype as the one
//                            before it writes that one's result again, whatever its inputs now
//                            are (a result cache keyed by the arguments): right while the inputs
//                            stay the same; a receive from the same peer into the same buffer
//                            with the same size as an earlier one delivers that one's message
//         | "post_only"      collectives through post are all zero bytes, through complete (ABI 1.1,
//                            what `run` times on a host backend) right: a fast path checked while
//                            the one workloads use is not
//         | "refuse_all"     every collective is refused with CB_ERR_UNIMPLEMENTED although the
//                            capabilities advertise all of them
//   overflow_bytes = bytes the "overflow" and "underflow" faults write outside (default 4)
//   overflow_value = the byte they write (default 0; 90 = 0x5A, the first check's guard byte
//                    just past a buffer, is what a fill byte of that value would write)
//   avg = "divide" (default: the exact sum, divided once) | "premultiply" (NCCL's way for
//         floats: each input times 1/n rounded to the dtype, then summed with a rounding per
//         addition; correct, and the check must accept its rounding)
//   good_posts = collectives written before "stale" stops writing (default 1)
//   refuse_after = collectives run before every later one is refused with CB_ERR_UNIMPLEMENTED
//                  (default: never), on top of `fault`: a backend that refuses a case late
//   rotate = elements of the "rotate" fault (default 120)
//   chunk_bytes = the "chunk" fault's limit (default 1 MiB)
#include <algorithm>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "commbench/backend.h"
#include "commbench/sdk/dtypes.hpp"
#include "commbench/sdk/host_reduce.hpp"
#include "commbench/sdk/plugin_entry.hpp"
#include "commbench/sdk/plugin_error.hpp"
#include "commbench/sdk/plugin_options.hpp"

namespace faulty {

enum class Fault {
  None, Zeros, MaxForProd, Stale, NonrootWrite, Rotate, AvgRounding, Chunk, Overflow, Underflow, ClobberSend,
  RepeatStale, RefuseAll, Cache, PostOnly
};

}  // namespace faulty

struct cb_backend {
  const cb_host_services* host = nullptr;
  faulty::Fault fault = faulty::Fault::None;
  bool premultiply = false;
  int64_t good_posts = 1;
  int64_t refuse_after = -1;
  int64_t rotate = 120;
  int64_t chunk_bytes = 1 << 20;
  int64_t overflow_bytes = 4;
  int overflow_value = 0;
};

namespace faulty {
// Bytes of a result the backend writes: all of them, or the first chunk under the "chunk" fault.
size_t written_bytes(const cb_backend& b, size_t bytes) {
  return b.fault == Fault::Chunk ? std::min(bytes, static_cast<size_t>(b.chunk_bytes)) : bytes;
}
}  // namespace faulty
struct cb_comm {
  cb_backend* backend = nullptr;
  int32_t timeout_ms = 0;
  int64_t collectives = 0;  // data-carrying posts so far (barriers excluded)
  bool via_complete = false;  // the collective running came through complete, not post
  std::tuple<int, const void*, void*, uint64_t, int> last{};  // op, buffers, count, dtype of the last one
  std::vector<unsigned char> last_result;  // what the last one wrote (the "cache" fault)
  // (peer, buffer, bytes) -> the message a receive delivered (the "cache" fault on receives).
  std::map<std::tuple<int, void*, size_t>, std::vector<unsigned char>> delivered;
  // (src, dst, tag) -> messages sent / receives posted so far: apart, so that a rank sending to
  // itself numbers its send and its receive alike; by tag, as the ABI matches (plugin-abi.md §4).
  std::map<std::tuple<int, int, uint32_t>, uint64_t> sent, received;
};
// Collectives and sends complete inside post(); a receive completes when its key is in the store.
struct cb_request {
  cb_comm* comm = nullptr;
  std::string key;  // empty: already complete
  void* buffer = nullptr;
  size_t bytes = 0;
  int peer = -1;
  cb_dtype dtype = CB_DTYPE_F32;
};

namespace faulty {
namespace sdk = commbench::sdk;

void check_host(cb_status s, const char* call) {
  if (s != CB_OK) sdk::fail(s, std::string("host ") + call + " failed");
}

uint64_t send_elems(cb_op op, uint64_t count, int world) {
  return op == CB_OP_REDUCESCATTER || op == CB_OP_ALLTOALL || op == CB_OP_SCATTER ? count * world : count;
}
uint64_t recv_elems(cb_op op, uint64_t count, int world) {
  return op == CB_OP_ALLGATHER || op == CB_OP_ALLTOALL || op == CB_OP_GATHER ? count * world : count;
}
bool is_float(cb_dtype d) {
  return d == CB_DTYPE_F16 || d == CB_DTYPE_BF16 || d == CB_DTYPE_F32 || d == CB_DTYPE_F64 ||
         d == CB_DTYPE_F8E4M3 || d == CB_DTYPE_F8E5M2;
}

// Reduces the `n` elements at `offset` of every rank's contribution into `out`.
void reduce_blocks(const cb_backend& b, const cb_op_args& a, const std::vector<unsigned char>& all,
                   size_t per_rank_bytes, uint64_t offset, uint64_t n, unsigned char* out) {
  const int world = b.host->world_size;
  const size_t es = sdk::dtype_size(a.dtype);
  cb_redop op = a.redop;
  if (op == CB_REDOP_PROD && b.fault == Fault::MaxForProd) op = CB_REDOP_MAX;
  const bool premultiply = op == CB_REDOP_AVG && b.premultiply && is_float(a.dtype);
  std::vector<unsigned char> term(n * es);
  for (int r = 0; r < world; ++r) {
    const unsigned char* in = all.data() + static_cast<size_t>(r) * per_rank_bytes + offset * es;
    const unsigned char* src = in;
    if (premultiply) {
      // x * (1/n), with 1/n and the product rounded to the dtype.
      unsigned char scalar[8];
      sdk::store_from_double(a.dtype, scalar, 0, 1.0 / world);
      const double inv = sdk::load_as_double(a.dtype, scalar, 0);
      for (uint64_t i = 0; i < n; ++i) sdk::store_from_double(a.dtype, term.data(), i, sdk::load_as_double(a.dtype, in, i) * inv);
      src = term.data();
    }
    if (r == 0) std::memcpy(out, src, n * es);
    else sdk::reduce(a.dtype, op, out, out, src, n);
  }
  if (op != CB_REDOP_AVG || premultiply) return;
  if (b.fault == Fault::AvgRounding) {
    for (uint64_t i = 0; i < n; ++i) {
      const double v = sdk::load_as_double(a.dtype, out, i) / world;
      sdk::store_from_double(a.dtype, out, i, is_float(a.dtype) ? std::trunc(v) : std::round(v));
    }
    return;
  }
  sdk::reduce_finish_avg(a.dtype, out, n, world);
}

// The store key of the n-th message from src to dst (messages between a pair are ordered).
std::string message_key(std::map<std::tuple<int, int, uint32_t>, uint64_t>& count, int src, int dst, uint32_t tag) {
  return "faulty/" + std::to_string(src) + "/" + std::to_string(dst) + "/" + std::to_string(tag) + "/" +
         std::to_string(count[{src, dst, tag}]++);
}

void rotate_block(const cb_backend& b, unsigned char* p, uint64_t n, size_t es) {
  if (n > 0) std::rotate(p, p + (static_cast<uint64_t>(b.rotate) % n) * es, p + n * es);
}

// Tries to complete a receive: true once the message is in the buffer.
bool try_receive(cb_request& r, int32_t timeout_ms) {
  const cb_host_services& h = *r.comm->backend->host;
  std::vector<unsigned char> data(r.bytes);
  size_t length = 0;
  const cb_status s = h.kv_get(h.ctx, r.key.c_str(), data.data(), data.size(), &length, timeout_ms);
  if (s == CB_ERR_TIMEOUT) return false;
  check_host(s, "kv_get");
  if (length != r.bytes) sdk::fail(CB_ERR_INVALID_ARGUMENT, "message size differs from the receive count");
  if (r.comm->backend->fault == Fault::Rotate) rotate_block(*r.comm->backend, data.data(), r.bytes / sdk::dtype_size(r.dtype), sdk::dtype_size(r.dtype));
  if (r.comm->backend->fault == Fault::Zeros) std::fill(data.begin(), data.end(), 0);
  const cb_backend& b = *r.comm->backend;
  if (b.fault == Fault::Cache) {  // a receive like an earlier one delivers that one's message again
    const auto [it, fresh] = r.comm->delivered.try_emplace(std::tuple{r.peer, r.buffer, r.bytes}, data);
    if (!fresh) data = it->second;
  }
  std::memcpy(r.buffer, data.data(), written_bytes(b, r.bytes));
  if (b.fault == Fault::Overflow)
    std::memset(static_cast<unsigned char*>(r.buffer) + r.bytes, b.overflow_value, static_cast<size_t>(b.overflow_bytes));
  if (b.fault == Fault::Underflow)
    std::memset(static_cast<unsigned char*>(r.buffer) - b.overflow_bytes, b.overflow_value, static_cast<size_t>(b.overflow_bytes));
  r.key.clear();
  return true;
}

void run(cb_comm& comm, const cb_op_args& a) {
  const cb_backend& b = *comm.backend;
  const cb_host_services& h = *b.host;
  if (a.op == CB_OP_BARRIER) {
    check_host(h.bootstrap_barrier(h.ctx, comm.timeout_ms), "bootstrap_barrier");
    return;
  }
  if (a.mem_type != CB_MEM_HOST) sdk::fail(CB_ERR_UNIMPLEMENTED, "host memory only");
  if (b.fault == Fault::RefuseAll) sdk::fail(CB_ERR_UNIMPLEMENTED, "every collective refused (fault refuse_all)");
  if (b.refuse_after >= 0 && comm.collectives >= b.refuse_after)
    sdk::fail(CB_ERR_UNIMPLEMENTED, "collectives refused after the first refuse_after");
  const int world = h.world_size, rank = h.rank;
  const size_t es = sdk::dtype_size(a.dtype);
  const uint64_t n = a.count;
  const size_t send_bytes = send_elems(a.op, n, world) * es;
  // Non-roots of scatter (and broadcast) may pass no send buffer: contribute zeros.
  std::vector<unsigned char> mine(send_bytes, 0), all(send_bytes * static_cast<size_t>(world));
  if (a.sendbuf != nullptr) std::memcpy(mine.data(), a.sendbuf, send_bytes);
  check_host(h.bootstrap_allgather(h.ctx, mine.data(), send_bytes, all.data(), comm.timeout_ms), "bootstrap_allgather");

  const uint64_t out_elems = recv_elems(a.op, n, world);
  std::vector<unsigned char> out(out_elems * es, 0);
  const bool is_root = rank == a.root;
  bool writes = true;
  auto block_of = [&](int r, uint64_t elem) { return all.data() + static_cast<size_t>(r) * send_bytes + elem * es; };
  switch (a.op) {
    case CB_OP_ALLREDUCE: reduce_blocks(b, a, all, send_bytes, 0, n, out.data()); break;
    case CB_OP_REDUCE:
      reduce_blocks(b, a, all, send_bytes, 0, n, out.data());
      writes = is_root || b.fault == Fault::NonrootWrite;
      break;
    case CB_OP_REDUCESCATTER:
      reduce_blocks(b, a, all, send_bytes, static_cast<uint64_t>(rank) * n, n, out.data());
      break;
    case CB_OP_ALLGATHER:
    case CB_OP_GATHER:
      for (int r = 0; r < world; ++r) std::memcpy(out.data() + r * n * es, block_of(r, 0), n * es);
      writes = a.op == CB_OP_ALLGATHER || is_root || b.fault == Fault::NonrootWrite;
      break;
    case CB_OP_BROADCAST: std::memcpy(out.data(), block_of(a.root, 0), n * es); break;
    case CB_OP_SCATTER: std::memcpy(out.data(), block_of(a.root, static_cast<uint64_t>(rank) * n), n * es); break;
    case CB_OP_ALLTOALL:
      for (int r = 0; r < world; ++r) std::memcpy(out.data() + r * n * es, block_of(r, static_cast<uint64_t>(rank) * n), n * es);
      break;
    default: sdk::fail(CB_ERR_UNIMPLEMENTED, "unknown op");
  }
  const bool moves = !sdk::is_reduction(a.op);
  if (b.fault == Fault::Rotate && moves && n > 0)
    for (uint64_t blk = 0; blk < out_elems / n; ++blk) rotate_block(b, out.data() + blk * n * es, n, es);
  if (b.fault == Fault::Zeros || (b.fault == Fault::PostOnly && !comm.via_complete)) std::fill(out.begin(), out.end(), 0);
  if (b.fault == Fault::Stale && comm.collectives >= b.good_posts) writes = false;
  ++comm.collectives;
  const auto call = std::tuple{static_cast<int>(a.op), a.sendbuf, a.recvbuf, n, static_cast<int>(a.dtype)};
  const bool repeated = b.fault == Fault::RepeatStale && call == comm.last && out.size() >= es;
  if (b.fault == Fault::Cache && call == comm.last && comm.last_result.size() == out.size()) out = comm.last_result;
  comm.last_result = out;
  comm.last = call;
  if (writes) std::memcpy(a.recvbuf, out.data(), written_bytes(b, out.size()) - (repeated ? es : 0));
  if (writes && b.fault == Fault::Overflow)
    std::memset(static_cast<unsigned char*>(a.recvbuf) + out.size(), b.overflow_value, static_cast<size_t>(b.overflow_bytes));
  if (writes && b.fault == Fault::Underflow)
    std::memset(static_cast<unsigned char*>(a.recvbuf) - b.overflow_bytes, b.overflow_value, static_cast<size_t>(b.overflow_bytes));
  if (b.fault == Fault::ClobberSend && a.sendbuf != nullptr && a.sendbuf != a.recvbuf)
    std::memset(const_cast<void*>(a.sendbuf), 0, send_bytes);
}

struct Traits {
  static constexpr const char* name = "faulty";
  static cb_error* translate(std::string_view what) noexcept { return sdk::error_from_standard_exception(what); }
  static cb_capabilities capabilities(const cb_backend*) {
    cb_capabilities c{};
    c.struct_size = sizeof(c);
    c.ops = CB_BIT(CB_OP_COUNT_V1) - 1;
    c.dtypes = CB_BIT(CB_DTYPE_COUNT_V1) - 1;
    c.reduce_dtypes = CB_BIT(CB_DTYPE_COUNT_V1) - 1;
    c.redops = CB_BIT(CB_REDOP_COUNT_V1) - 1;
    c.mem_types = CB_BIT(CB_MEM_HOST);
    c.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE;
    return c;
  }
  static std::unique_ptr<cb_backend> create_backend(const cb_host_services& host) {
    auto b = std::make_unique<cb_backend>();
    b->host = &host;
    sdk::for_each_option(host.options, host.num_options, [&](std::string_view key, std::string_view value) {
      if (key == "fault") {
        static const std::pair<std::string_view, Fault> kFaults[] = {
            {"none", Fault::None}, {"zeros", Fault::Zeros}, {"max_for_prod", Fault::MaxForProd},
            {"stale", Fault::Stale}, {"nonroot_write", Fault::NonrootWrite}, {"rotate", Fault::Rotate},
            {"avg_rounding", Fault::AvgRounding}, {"chunk", Fault::Chunk}, {"overflow", Fault::Overflow},
            {"underflow", Fault::Underflow}, {"clobber_send", Fault::ClobberSend},
            {"repeat_stale", Fault::RepeatStale}, {"refuse_all", Fault::RefuseAll},
            {"cache", Fault::Cache}, {"post_only", Fault::PostOnly}};
        const auto* it = std::find_if(std::begin(kFaults), std::end(kFaults), [&](const auto& f) { return f.first == value; });
        if (it == std::end(kFaults))
          sdk::bad_option_value(key, value, "none, zeros, max_for_prod, stale, nonroot_write, rotate, avg_rounding, chunk, "
                                            "overflow, underflow, clobber_send, repeat_stale, refuse_all, cache or post_only");
        b->fault = it->second;
      } else if (key == "avg") {
        if (value != "divide" && value != "premultiply") sdk::bad_option_value(key, value, "divide or premultiply");
        b->premultiply = value == "premultiply";
      } else if (key == "good_posts") {
        b->good_posts = sdk::parse_integer_option(key, value, 0, INT32_MAX, "a whole number >= 0");
      } else if (key == "refuse_after") {
        b->refuse_after = sdk::parse_integer_option(key, value, 0, INT32_MAX, "a whole number >= 0");
      } else if (key == "rotate") {
        b->rotate = sdk::parse_integer_option(key, value, 0, INT32_MAX, "a whole number >= 0");
      } else if (key == "chunk_bytes") {
        b->chunk_bytes = sdk::parse_integer_option(key, value, 1, INT32_MAX, "a number of bytes >= 1");
      } else if (key == "overflow_bytes") {
        b->overflow_bytes = sdk::parse_integer_option(key, value, 1, 4096, "a number of bytes from 1 to 4096");
      } else if (key == "overflow_value") {
        b->overflow_value = static_cast<int>(sdk::parse_integer_option(key, value, 0, 255, "a byte value from 0 to 255"));
      } else {
        sdk::unknown_option(name, key,
                            {"fault", "avg", "good_posts", "refuse_after", "rotate", "chunk_bytes", "overflow_bytes", "overflow_value"});
      }
    });
    return b;
  }
  static void emit_metadata(const cb_backend&, void (*emit)(void*, const char*, const char*), void* ctx) {
    emit(ctx, "transport", "commbench bootstrap store (test plugin with deliberate bugs)");
  }
  static std::unique_ptr<cb_comm> create_communicator(cb_backend& b, int32_t timeout_ms) {
    check_host(b.host->bootstrap_barrier(b.host->ctx, timeout_ms), "bootstrap_barrier");
    auto c = std::make_unique<cb_comm>();
    c->backend = &b;
    c->timeout_ms = timeout_ms;
    return c;
  }
  static std::unique_ptr<cb_request> post(cb_comm& comm, const cb_op_args& a) {
    auto r = std::make_unique<cb_request>();
    r->comm = &comm;
    const cb_host_services& h = *comm.backend->host;
    const size_t bytes = a.count * sdk::dtype_size(a.dtype);
    if (a.op == CB_OP_SEND) {
      if (a.mem_type != CB_MEM_HOST) sdk::fail(CB_ERR_UNIMPLEMENTED, "host memory only");
      const std::string key = message_key(comm.sent, h.rank, a.peer, a.tag);
      check_host(h.kv_set(h.ctx, key.c_str(), a.sendbuf, bytes, comm.timeout_ms), "kv_set");
    } else if (a.op == CB_OP_RECV) {
      if (a.mem_type != CB_MEM_HOST) sdk::fail(CB_ERR_UNIMPLEMENTED, "host memory only");
      // Completed in test/wait: a rank may post its receives before its sends.
      r->key = message_key(comm.received, a.peer, h.rank, a.tag);
      r->buffer = a.recvbuf;
      r->bytes = bytes;
      r->dtype = a.dtype;
      r->peer = a.peer;
    } else {
      run(comm, a);
    }
    return r;
  }
  // post + wait, except that a collective is run as coming through complete (the "post_only" fault).
  static void complete(cb_comm& comm, const cb_op_args& a, int32_t timeout_ms) {
    comm.via_complete = true;
    try {
      auto r = post(comm, a);
      wait(*r, timeout_ms);
    } catch (...) {
      comm.via_complete = false;
      throw;
    }
    comm.via_complete = false;
  }
  static bool test(cb_request& r) { return r.key.empty() || try_receive(r, 1); }
  static void wait(cb_request& r, int32_t timeout_ms) {
    if (!r.key.empty() && !try_receive(r, timeout_ms)) sdk::fail(CB_ERR_TIMEOUT, "recv: no message within the timeout");
  }
  // Nothing to cancel: aborting is destroying (the SDK deletes the communicator).
  static void abort_communicator(std::unique_ptr<cb_comm>) {}
};

}  // namespace faulty

extern "C" CB_EXPORT const cb_backend_api* commbench_backend_v1(void) {
  static const cb_backend_api api = commbench::sdk::EntryPoints<faulty::Traits>::table(
      "1.0", "test plugin: collectives with one deliberate bug, to prove the result check catches it");
  return &api;
}
