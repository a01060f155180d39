#include "workload/memory_run.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bootstrap/deadline.h"
#include "commbench/sdk/dtypes.hpp"
#include "plugin/plugin_error.h"

namespace commbench::workload {
namespace {

constexpr uint64_t kNoDevice = UINT64_MAX;  // a device figure on a rank without a GPU

// The buffers of one case, freed on scope exit (an exception included).
class MemoryBuffers {
 public:
  explicit MemoryBuffers(GpuDevice* gpu) : gpu_(gpu) {}
  ~MemoryBuffers() {
    for (void* p : device_) gpu_->free_device(p);
  }
  // `what` names the buffer in the out-of-memory message.
  void add(cb_mem mem, uint64_t bytes, const char* what) {
    if (bytes == 0) return;
    if (mem == CB_MEM_CUDA) {
      const uint64_t free = gpu_->free_bytes();
      if (bytes > free)
        throw OutOfMemory(fmt::format("out of device memory: {}: {} bytes needed, {} free of {} (cudaMemGetInfo)",
                                      what, bytes, free, gpu_->total_bytes()));
      try {
        device_.push_back(gpu_->alloc_device(bytes));
      } catch (const PluginError& e) {
        if (e.status() != CB_ERR_RESOURCE_EXHAUSTED) throw;
        throw OutOfMemory(fmt::format("out of device memory: cudaMalloc of {} bytes for {} failed: {}",
                                      bytes, what, e.what()));
      }
      return;  // cudaMalloc commits device memory when it allocates: nothing to touch
    }
    // Host: checked against MemAvailable first, so that the kernel's OOM killer never answers.
    const uint64_t available = available_host_bytes();
    if (available > 0 && bytes > available)
      throw OutOfMemory(fmt::format("out of host memory: {}: {} bytes needed, {} available (MemAvailable)",
                                    what, bytes, available));
    std::unique_ptr<std::byte[]> p(new (std::nothrow) std::byte[bytes]);
    if (!p) throw OutOfMemory(fmt::format("out of host memory: allocating {} bytes for {} failed", bytes, what));
    std::memset(p.get(), 0x5a, bytes);  // every page touched: resident, so RSS counts it
    host_.push_back(std::move(p));
  }

  struct OutOfMemory : std::runtime_error {
    using std::runtime_error::runtime_error;
  };

 private:
  GpuDevice* gpu_;
  std::vector<void*> device_;
  std::vector<std::unique_ptr<std::byte[]>> host_;
};

// One rank's figures, gathered to rank 0 (fixed layout for Bootstrap::gather).
struct RankMemoryFigures {
  uint64_t rss_before_comm, rss_after_comm, rss_before_buffers, rss_after_buffers, rss_after_workload, rss_peak;
  uint64_t dev_total, dev_free_before_comm, dev_free_after_comm, dev_free_before_buffers, dev_free_after_buffers,
      dev_free_after_workload;  // kNoDevice without a GPU
  uint32_t status;            // 0 ok, 1 failed, 2 unsupported
  char reason[300];
};

uint64_t grown_by(uint64_t before, uint64_t after) { return after > before ? after - before : 0; }

}  // namespace

MemoryPhase memory_now(const GpuDevice* gpu) {
  MemoryPhase p;
  p.host_rss = resident_bytes();
  if (gpu) p.device_free = gpu->free_bytes();
  return p;
}

void keep_fuller(MemoryPhase& into, const MemoryPhase& now) {
  into.host_rss = std::max(into.host_rss, now.host_rss);
  if (now.device_free) into.device_free = into.device_free ? std::min(*into.device_free, *now.device_free) : *now.device_free;
}

MemoryCase memory_case_of(const Execution& exec, const Model& model, const char* workload, int batch_size,
                          cb_dtype dtype, Optimizer optimizer, bool sharded) {
  MemoryInputs in;
  in.dtype_bytes = sdk::dtype_size(dtype);
  in.optimizer = optimizer;
  in.batch_size = static_cast<uint64_t>(batch_size);
  in.world_size = exec.world_size;
  in.sharded = sharded;
  return MemoryCase{workload, model.name, static_cast<uint64_t>(batch_size), dtype, optimizer, sharded,
                    estimate_memory(with_model(in, model))};
}

MemoryMeasured measure_memory_case(const Execution& exec, const MemoryCase& c, GpuDevice* gpu) {
  MemoryMeasured m;
  m.before_buffers = m.after_buffers = m.after_workload = memory_now(gpu);
  if (exec.memory == CB_MEM_HOST_PINNED || (exec.memory == CB_MEM_CUDA && !gpu)) {
    m.status = "unsupported";
    m.reason = exec.memory == CB_MEM_CUDA
                   ? "memory = \"cuda\" but this rank has no usable GPU (the execution's metadata says why)"
                   : "the memory benchmark allocates in \"host\" or \"cuda\" memory; \"host_pinned\" is not measured";
    m.host_rss_peak = peak_resident_bytes();
    return m;
  }
  const MemoryEstimate& e = c.computed;
  MemoryBuffers bufs(gpu);  // freed after the measurement, failed or not
  try {
    bufs.add(exec.memory, e.parameter_bytes, "the parameters");
    bufs.add(exec.memory, e.gradient_bytes, "the gradients");
    bufs.add(exec.memory, e.optimizer_state_bytes, "the optimizer state");
    bufs.add(exec.memory, e.master_weight_bytes, "the fp32 master weights");
    m.after_buffers = memory_now(gpu);
    bufs.add(exec.memory, e.activation_bytes, "the activations");
    m.after_workload = memory_now(gpu);
    m.host_rss_peak = peak_resident_bytes();
  } catch (const MemoryBuffers::OutOfMemory& oom) {
    m.after_workload = memory_now(gpu);  // what did fit, still allocated
    m.status = "failed";
    m.reason = fmt::format("{} (model {}, batch size {}: {} bytes computed per rank)", oom.what(), c.model,
                           c.batch_size, e.total_bytes());
    m.host_rss_peak = peak_resident_bytes();
  }
  return m;
}

nlohmann::ordered_json memory_record(const Execution& exec, const MemoryCase& c, const MemoryFootprint& comm,
                                     const MemoryMeasured& m, Bootstrap& bootstrap, Millis timeout) {
  RankMemoryFigures mine{};
  mine.rss_before_comm = comm.host_rss_before_init;
  mine.rss_after_comm = comm.host_rss_after_init;
  mine.rss_before_buffers = m.before_buffers.host_rss;
  mine.rss_after_buffers = m.after_buffers.host_rss;
  mine.rss_after_workload = m.after_workload.host_rss;
  // VmHWM is counted apart from statm's resident pages and can read a little below a sample
  // taken earlier: a peak is never below what was seen.
  mine.rss_peak = std::max({m.host_rss_peak, mine.rss_before_comm, mine.rss_after_comm, mine.rss_before_buffers,
                            mine.rss_after_buffers, mine.rss_after_workload});
  const bool device = m.before_buffers.device_free.has_value() && comm.device_free_before_comm &&
                      comm.device_free_after_comm && comm.device_total;
  mine.dev_total = device ? *comm.device_total : kNoDevice;
  mine.dev_free_before_comm = device ? *comm.device_free_before_comm : kNoDevice;
  mine.dev_free_after_comm = device ? *comm.device_free_after_comm : kNoDevice;
  mine.dev_free_before_buffers = m.before_buffers.device_free.value_or(kNoDevice);
  mine.dev_free_after_buffers = m.after_buffers.device_free.value_or(kNoDevice);
  mine.dev_free_after_workload = m.after_workload.device_free.value_or(kNoDevice);
  mine.status = m.status == "ok" ? 0 : m.status == "failed" ? 1 : 2;
  std::strncpy(mine.reason, m.reason.c_str(), sizeof(mine.reason) - 1);

  std::vector<RankMemoryFigures> all(bootstrap.rank() == 0 ? static_cast<size_t>(bootstrap.world_size()) : 0);
  const auto deadline = Deadline::after(timeout);
  bootstrap.gather(&mine, sizeof(mine), all.data(), 0, Millis(deadline.remaining_ms()));
  // The ranks leave a batch size together, as they measured it: the gather lets the others go on
  // at once, and a host's or a device's free memory must not be read while another rank already
  // holds the next batch size's buffers.
  bootstrap.barrier(Millis(deadline.remaining_ms()));
  if (bootstrap.rank() != 0) return {};

  // The largest figure over ranks (the smallest free memory): the rank that runs out first.
  auto most = [&](auto field) {
    uint64_t v = 0;
    for (const auto& r : all) v = std::max<uint64_t>(v, field(r));
    return v;
  };
  nlohmann::ordered_json host{
      {"rss_before_comm_bytes", most([](const RankMemoryFigures& r) { return r.rss_before_comm; })},
      {"rss_after_comm_bytes", most([](const RankMemoryFigures& r) { return r.rss_after_comm; })},
      {"backend_bytes", most([](const RankMemoryFigures& r) { return grown_by(r.rss_before_comm, r.rss_after_comm); })},
      {"rss_after_buffers_bytes", most([](const RankMemoryFigures& r) { return r.rss_after_buffers; })},
      {"buffers_bytes", most([](const RankMemoryFigures& r) { return grown_by(r.rss_before_buffers, r.rss_after_buffers); })},
      {"rss_after_workload_bytes", most([](const RankMemoryFigures& r) { return r.rss_after_workload; })},
      {"workload_bytes", most([](const RankMemoryFigures& r) { return grown_by(r.rss_before_buffers, r.rss_after_workload); })},
      {"rss_peak_bytes", most([](const RankMemoryFigures& r) { return r.rss_peak; })}};
  nlohmann::ordered_json measured{{"ranks", bootstrap.world_size()}, {"host", host}};
  if (device) {
    auto least = [&](auto field) {
      uint64_t v = kNoDevice;
      for (const auto& r : all) v = std::min<uint64_t>(v, field(r));
      return v;
    };
    measured["device"] = {
        {"total_bytes", least([](const RankMemoryFigures& r) { return r.dev_total; })},
        {"free_before_comm_bytes", least([](const RankMemoryFigures& r) { return r.dev_free_before_comm; })},
        {"free_after_comm_bytes", least([](const RankMemoryFigures& r) { return r.dev_free_after_comm; })},
        {"backend_bytes", most([](const RankMemoryFigures& r) { return grown_by(r.dev_free_after_comm, r.dev_free_before_comm); })},
        {"free_after_buffers_bytes", least([](const RankMemoryFigures& r) { return r.dev_free_after_buffers; })},
        {"buffers_bytes", most([](const RankMemoryFigures& r) { return grown_by(r.dev_free_after_buffers, r.dev_free_before_buffers); })},
        {"free_after_workload_bytes", least([](const RankMemoryFigures& r) { return r.dev_free_after_workload; })},
        {"workload_bytes", most([](const RankMemoryFigures& r) { return grown_by(r.dev_free_after_workload, r.dev_free_before_buffers); })}};
  } else {
    measured["device"] = nullptr;
    measured["device_note"] = "no device memory measured: memory is not \"cuda\" (host RSS is what is measured)";
  }

  std::string status = "ok", reason;
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r].status != 0 && status == "ok") {
      status = all[r].status == 1 ? "failed" : "unsupported";
      reason = fmt::format("rank {}: {}", r, all[r].reason);
    }

  nlohmann::ordered_json j{{"experiment", exec.experiment}, {"run", exec.run},
                           {"run_index", exec.run_index},   {"repeat", exec.repeat}, {"backend", exec.backend},
                           {"world_size", exec.world_size}, {"workload", c.workload},
                           {"model", c.model},              {"batch_size", c.batch_size},
                           {"dtype", sdk::dtype_name(c.dtype)}, {"optimizer", optimizer_name(c.optimizer)},
                           {"sharding", c.sharded ? "fsdp" : "ddp"}, {"memory", sdk::mem_name(exec.memory)},
                           {"status", status}};
  if (!reason.empty()) j["reason"] = reason;
  j["computed"] = to_json(c.computed);
  j["measured"] = std::move(measured);
  return j;
}

void run_memory_workload(const Execution& exec, const MemoryRunSpec& spec, GpuDevice* gpu,
                         const MemoryFootprint& comm, Bootstrap& bootstrap, Millis timeout,
                         const std::function<void(const std::string&)>& progress,
                         const std::function<void(nlohmann::ordered_json)>& send) {
  for (const int batch : spec.batch_sizes) {
    progress(fmt::format("memory {} batch size {}", spec.model.name, batch));
    const MemoryCase c = memory_case_of(exec, spec.model, "memory", batch, spec.dtype, spec.optimizer, spec.sharded);
    const MemoryMeasured m = measure_memory_case(exec, c, gpu);
    nlohmann::ordered_json rec = memory_record(exec, c, comm, m, bootstrap, timeout);
    if (bootstrap.rank() == 0) send(std::move(rec));
  }
}

}  // namespace commbench::workload
