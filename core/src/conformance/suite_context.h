// What the conformance checks of one rank share: the session under test, the bootstrap the
// ranks agree through, and how a check is reported. Internal to conformance/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/collectives.h"
#include "common/memory_staging.h"
#include "conformance/conformance_report.h"
#include "device/gpu_device.h"
#include "plan/plan.h"
#include "plugin/backend_session.h"
#include "worker/result_channel.h"

namespace commbench {

// The largest message of the size ladder by default (`--max-bytes`): past the eager/rendezvous
// switch and the chunk sizes of every backend we know (docs/plugin-guide.md §12).
inline constexpr uint64_t kDefaultMaxBytes = 4u << 20;

struct SuiteContext {
  SuiteContext(BackendSession& s, Bootstrap& b, ResultChannel& o, int r = 0, int w = 1, int32_t timeout_ms = 30000)
      : session(s), boot(b), out(o), rank(r), world(w), op_timeout_ms(timeout_ms) {}

  BackendSession& session;
  Bootstrap& boot;
  ResultChannel& out;
  int rank = 0;
  int world = 1;
  int32_t op_timeout_ms = 30000;
  uint64_t max_bytes = kDefaultMaxBytes;  // the size ladder's top (`--max-bytes`)
  cb_capabilities caps{};           // what this process really has (get_capabilities(backend))
  GpuDevice* gpu = nullptr;         // set when the plugin takes device memory and a GPU is here
  std::string gpu_unusable;         // why not, when it takes device memory
  std::string broken;               // non-empty: the communicator failed; why (later checks skip)

  const cb_backend_api& api() const { return session.api(); }
  bool has_op(cb_op op) const { return caps.ops & CB_BIT(op); }
  // Sends one "check" line: {"name", "result": "pass"|"fail"|"skip", "detail"}.
  void report(const std::string& name, ConformanceResult result, const std::string& detail) const;
  // Every rank's value, in rank order (a bootstrap allgather: also keeps the ranks in step).
  std::vector<int64_t> agree(int64_t mine) const;
  // The memory types this process can drive: advertised, and a GPU here for device memory.
  std::vector<cb_mem> usable_memory() const;
};

// The ABI call's error as a status, the error consumed: CB_OK for NULL.
struct CallResult {
  cb_status code = CB_OK;
  std::string message;
};
CallResult call(const cb_backend_api& api, cb_error* error);

// "f32", "sum", "in_place"... for case descriptions.
std::string describe_case(const CaseSpec& c, cb_mem mem);

// Buffers for the checks that post by hand (refusals, bad arguments, concurrency): `bytes` of
// the given memory type from the plugin's allocator, the GPU, or the host.
class ScratchMemory {
 public:
  ScratchMemory(SuiteContext& ctx, cb_mem mem, size_t bytes);
  ~ScratchMemory();
  ScratchMemory(const ScratchMemory&) = delete;
  ScratchMemory& operator=(const ScratchMemory&) = delete;
  void* get() const { return ptr_; }
  cb_mem mem() const { return mem_; }

 private:
  SuiteContext& ctx_;
  cb_mem mem_;
  void* ptr_ = nullptr;
  bool from_gpu_ = false;
};

// Arguments as the core fills them (struct_size of ABI 1.0's last field, the stream of a
// stream-ordered backend).
cb_op_args base_args(const SuiteContext& ctx, cb_op op, void* send, void* recv, size_t count,
                     cb_dtype dtype, cb_mem mem);

// The checks, in the order run_rank_suite calls them (conformance/op_checks.cpp,
// conformance/error_checks.cpp).
void check_op_matrix(SuiteContext& ctx);
void check_op_sizes(SuiteContext& ctx);
void check_op_leaks(SuiteContext& ctx);
void check_self_send_recv(SuiteContext& ctx);
void check_p2p_pending_across_collective(SuiteContext& ctx);
void check_concurrent_collectives(SuiteContext& ctx);
void check_unadvertised_refused(SuiteContext& ctx);
void check_bad_arguments(SuiteContext& ctx);

}  // namespace commbench
