#include "measure/all_pairs.h"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "commbench/sdk/dtypes.hpp"
#include "device/gpu_device.h"
#include "measure/check_pattern.h"
#include "measure/clock_sync.h"
#include "measure/host_timer.h"
#include "stats/bandwidth.h"

namespace commbench {
namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// `generation` 1 for the check after the repetitions: other bytes than the first check's, so a
// backend that replays what it delivered before for the same pair and size fails.
uint64_t payload_key(uint64_t seed, int src, uint32_t generation = 0) {
  return splitmix64(seed ^ (static_cast<uint64_t>(src) << 48) ^ (uint64_t{generation} << 32));
}

uint8_t byte_of(uint64_t key, uint64_t index) {
  const uint64_t word = splitmix64(key + index / 8);
  const auto b = static_cast<uint8_t>(word >> (8 * (index % 8)));
  return b != 0 ? b : 0xA5;  // never zero: an undelivered byte (zeroed before) is caught
}

// Calls f(i, byte) for the payload's bytes 0..bytes-1, one hash per 8 bytes (a 1 GiB payload
// is generated and checked in about a second).
template <class F>
void for_each_payload_byte(uint64_t key, uint64_t bytes, F&& f) {
  for (uint64_t w = 0; w * 8 < bytes; ++w) {
    const uint64_t word = splitmix64(key + w);
    for (uint64_t b = 0; b < 8 && w * 8 + b < bytes; ++b) {
      const auto v = static_cast<uint8_t>(word >> (8 * b));
      f(w * 8 + b, v != 0 ? v : uint8_t{0xA5});
    }
  }
}

void fill_payload(uint64_t seed, int src, unsigned char* buf, uint64_t bytes, uint32_t generation) {
  for_each_payload_byte(payload_key(seed, src, generation), bytes, [&](uint64_t i, uint8_t v) { buf[i] = v; });
}

// One configuration's check at the receiver: mismatched bytes and the first of them. Fixed
// layout: allgathered.
struct ByteCheck {
  int64_t wrong = 0;
  int64_t first_index = -1;
  int32_t expected = 0, got = 0;
  int32_t check = -1;  // CheckStage of the first mismatch
  int32_t buffer = 0;  // CheckedBuffer of the first mismatch: the message, or a guard beside it
};

// The receiver's check of one transfer: the message's bytes, and the guard bytes just before and
// just after them (a backend that writes outside the message it was given).
void check_bytes(uint64_t seed, int src, uint32_t generation, const unsigned char* buf, uint64_t bytes,
                 CheckStage stage, ByteCheck& out) {
  int64_t wrong = 0;
  auto first = [&](int64_t index, int32_t expected, int32_t got, CheckedBuffer where) {
    if (out.first_index >= 0) return;
    out.first_index = index;
    out.expected = expected;
    out.got = got;
    out.check = static_cast<int32_t>(stage);
    out.buffer = static_cast<int32_t>(where);
  };
  for_each_payload_byte(payload_key(seed, src, generation), bytes, [&](uint64_t i, uint8_t v) {
    if (buf[i] == v) return;
    if (wrong++ == 0) first(static_cast<int64_t>(i), v, buf[i], CheckedBuffer::kRecv);
  });
  for (const auto& [guard, which] : {std::pair{buf - kGuardBytes, CheckedBuffer::kBeforeRecvStart},
                                     std::pair{buf + bytes, CheckedBuffer::kPastRecvEnd}}) {
    const CheckResult g = check_guard(guard, kGuardBytes, 1, which, generation);
    if (g.wrong > 0 && wrong == 0) first(static_cast<int64_t>(g.first->index), -1, static_cast<int32_t>(g.first->got), which);
    wrong += g.wrong;
  }
  out.wrong = std::max(out.wrong, wrong);  // the larger of the two checked transfers
}

// The worker's one timer (measure/host_timer.h), like every other time it reports.
int64_t now_ns() { return HostTimer::get().now_ns(); }

// The sweep's buffers, freed on every path: host memory, or device memory (memory = "cuda" on a
// backend that drives it, NCCL) written and read through host copies on the worker's stream. The
// receive buffer starts kGuardBytes into its allocation and keeps kGuardBytes after the largest
// message: guards for the check.
class SweepBuffers {
 public:
  SweepBuffers(BackendSession& s, GpuDevice* gpu, cb_mem mem, uint64_t bytes) : s_(s), gpu_(gpu), mem_(mem) {
    // As for case buffers: ask first, since an allocation that does not fit may fail late.
    if (on_device() && 2 * bytes + 2 * kGuardBytes > gpu_->free_bytes())
      throw PluginError(CB_ERR_RESOURCE_EXHAUSTED, cuda::kErrorSource, "cudaMemGetInfo",
                        fmt::format("the sweep needs {} bytes of device memory, {} are free on device {}",
                                    2 * bytes + 2 * kGuardBytes, gpu_->free_bytes(), gpu_->index()));
    send_ = alloc(bytes);
    try {
      recv_ = alloc(bytes + 2 * kGuardBytes);
    } catch (...) {
      release(send_);
      throw;
    }
  }
  ~SweepBuffers() {
    for (void* p : {send_, recv_}) {
      try { release(p); } catch (...) {}  // freeing never fails a measured sweep
    }
  }
  unsigned char* send() const { return static_cast<unsigned char*>(send_); }
  unsigned char* recv() const { return static_cast<unsigned char*>(recv_) + kGuardBytes; }

  // This rank's payload of `generation` in the first `bytes` of the send buffer.
  void fill_send(uint64_t seed, int rank, uint64_t bytes, uint32_t generation) {
    if (!on_device()) return fill_payload(seed, rank, send(), bytes, generation);
    host_.resize(bytes);
    fill_payload(seed, rank, host_.data(), bytes, generation);
    gpu_->copy_to_device_on_stream(send_, host_.data(), bytes);
  }
  // Before a checked receive of `bytes`: zeros where the message goes, guards on both sides.
  void prepare_receive(uint64_t bytes, uint32_t generation) {
    unsigned char* at = on_device() ? (host_.resize(bytes + 2 * kGuardBytes), host_.data()) : recv() - kGuardBytes;
    fill_guard(at, kGuardBytes, generation);
    std::memset(at + kGuardBytes, 0, bytes);
    fill_guard(at + kGuardBytes + bytes, kGuardBytes, generation);
    if (on_device()) gpu_->copy_to_device_on_stream(recv_, host_.data(), host_.size());
  }
  // The received message with its guards, readable on the host: the message starts kGuardBytes in.
  const unsigned char* received(uint64_t bytes) {
    if (!on_device()) return recv();
    host_.resize(bytes + 2 * kGuardBytes);
    gpu_->copy_to_host_on_stream(host_.data(), recv_, host_.size());
    return host_.data() + kGuardBytes;
  }

 private:
  bool on_device() const { return mem_ == CB_MEM_CUDA; }
  // As case buffers are: the backend's allocator if it has one, else cudaMalloc for device memory.
  void* alloc(size_t bytes) {
    return on_device() && !s_.api().mem_alloc ? gpu_->alloc_device(bytes) : s_.alloc(mem_, bytes);
  }
  void release(void* p) {
    if (on_device() && !s_.api().mem_alloc) gpu_->free_device(p);
    else s_.free(mem_, p);
  }

  BackendSession& s_;
  GpuDevice* gpu_;
  cb_mem mem_;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  std::vector<unsigned char> host_;  // the host side of device copies
};

struct Interval {
  int64_t start_ns = 0, end_ns = 0;  // this rank's timer around its own send or receive
  // The host clock when the sender posted (read just before its start) or when the receiver saw
  // the message (just after its end).
  int64_t monotonic_ns = 0;
};

cb_op_args pair_op(const CaseEnvironment& env, cb_op op, int peer, const SweepBuffers& bufs, uint64_t count,
                   cb_dtype dtype) {
  cb_op_args a{};
  a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
  a.op = op;
  a.sendbuf = bufs.send();
  a.recvbuf = bufs.recv();
  a.count = count;
  a.dtype = dtype;
  a.peer = peer;
  a.mem_type = env.exec.memory;
  // A stream-ordered backend (NCCL) works on the worker's stream, like every other op.
  if (env.gpu && env.exec.memory == CB_MEM_CUDA && (env.caps.flags & CB_CAP_STREAM_ORDERED))
    a.stream = env.gpu->stream();
  return a;
}

// One message src -> dst after a synchronised start; this rank's interval (zeros when it is
// neither src nor dst). The receiver first tells the sender it is there (one element of the
// case's dtype, dst -> src) and the sender posts only then. Without it a receiver that left the
// barrier after the message had landed timed nothing of the transfer, and an eager send completes
// at once: the cell showed a link faster than it is. The receiver's own time starts before that
// message, so it cannot start after the sender posted (the sample across clocks is its time).
Interval transfer(CaseEnvironment& env, const AllPairsConfig& cfg, const CaseSpec& spec,
                  const SweepBuffers& bufs) {
  sync_start(env);
  const int rank = env.bootstrap.rank();
  if (rank != cfg.src && rank != cfg.dst) return {};
  const bool sender = rank == cfg.src;
  const int peer = sender ? cfg.dst : cfg.src;
  const cb_op_args ready = pair_op(env, sender ? CB_OP_RECV : CB_OP_SEND, peer, bufs, 1, spec.dtype);
  const cb_op_args a = pair_op(env, sender ? CB_OP_SEND : CB_OP_RECV, peer, bufs, spec.count, spec.dtype);
  Interval t;
  if (!sender) t.start_ns = now_ns();
  env.session.complete(ready, remaining_ms(env));
  if (sender) {
    t.monotonic_ns = monotonic_ns();
    t.start_ns = now_ns();
  }
  env.session.complete(a, remaining_ms(env));
  t.end_ns = now_ns();
  if (!sender) t.monotonic_ns = monotonic_ns();
  return t;
}

// The sender and receiver read one CLOCK_MONOTONIC (the same clock group).
bool one_clock(const CaseEnvironment& env, const AllPairsConfig& cfg) {
  const auto& g = env.clock_group;
  return static_cast<size_t>(std::max(cfg.src, cfg.dst)) < g.size() &&
         g[static_cast<size_t>(cfg.src)] == g[static_cast<size_t>(cfg.dst)];
}

}  // namespace

int64_t transfer_duration_ns(bool one_clock, const PairTimes& sender, const PairTimes& receiver) {
  const int64_t sent = sender.end_ns - sender.start_ns;
  if (one_clock) return std::max(sent, receiver.monotonic_ns - sender.monotonic_ns);
  return std::max(sent, receiver.end_ns - receiver.start_ns);
}

void to_json(nlohmann::json& j, const TransferLogEntry& e) {
  j = nlohmann::json::array({e.config_id, e.src, e.dst, e.bytes, e.repetition, e.start_ns, e.end_ns,
                             e.duration_ns, e.timer_rank});
}

void from_json(const nlohmann::json& j, TransferLogEntry& e) {
  e = TransferLogEntry{j.at(0).get<int>(), j.at(1).get<int>(), j.at(2).get<int>(),
                       j.at(3).get<uint64_t>(), j.at(4).get<int>(), j.at(5).get<int64_t>(),
                       j.at(6).get<int64_t>(), j.at(7).get<int64_t>(), j.at(8).get<int>()};
}

std::vector<AllPairsConfig> all_pairs_configs(int world, size_t sizes, uint64_t seed) {
  std::vector<AllPairsConfig> configs;
  for (int src = 0; src < world; ++src)
    for (int dst = 0; dst < world; ++dst)
      for (size_t s = 0; s < sizes && src != dst; ++s)
        configs.push_back({static_cast<int>(configs.size()), src, dst, s});
  uint64_t state = seed;
  for (size_t i = configs.size(); i > 1; --i) {
    state = splitmix64(state);
    std::swap(configs[i - 1], configs[state % i]);
  }
  return configs;
}

uint8_t all_pairs_payload_byte(uint64_t seed, int src, uint64_t index) {
  return byte_of(payload_key(seed, src, 0), index);
}

void run_all_pairs(CaseEnvironment& env, const std::vector<CaseSpec>& cases, const AllPairsSink& sink) {
  const Execution& e = env.exec;
  const int rank = env.bootstrap.rank(), world = env.bootstrap.world_size();
  if (cases.empty()) return;
  // A sweep that cannot run still accounts for every case the plan counted: one per pair and size.
  auto record_every_pair = [&](const std::string& status, const std::string& why) {
    for (const CaseSpec& c : cases)
      for (int src = 0; src < world; ++src)
        for (int dst = 0; dst < world; ++dst) {
          if (src == dst) continue;
          CaseRecord r = make_case_record(e, c);
          r.src = src;
          r.dst = dst;
          r.status = status;
          r.reason = why;
          sink.record(std::move(r));
        }
  };
  // Every rank judges, and all agree: one rank that cannot run it (its GPU unusable) must not
  // leave the others waiting for it in the sweep until the execution's deadline.
  const std::string reason = unsupported_reason(env, cases.front());
  const int refusing = env.bootstrap.first_rank_that(!reason.empty(), Millis(remaining_ms(env)));
  if (refusing >= 0) {
    if (rank == 0)
      record_every_pair("unsupported", !reason.empty() ? reason
                                                       : fmt::format("rank {} cannot run it (its log says why)", refusing));
    return;
  }
  uint64_t largest = 0;
  for (const CaseSpec& c : cases) largest = std::max(largest, c.bytes);
  const std::vector<AllPairsConfig> configs = all_pairs_configs(world, cases.size(), e.seed);
  // Every rank must have its buffers before any transfer, or a rank that could not allocate
  // would leave its peers waiting: all learn whether all succeeded.
  std::unique_ptr<SweepBuffers> owned;
  std::string alloc_error;
  try {
    owned = std::make_unique<SweepBuffers>(env.session, env.gpu, e.memory, std::max<uint64_t>(largest, 1));
  } catch (const PluginError& err) {
    if (err.status() != CB_ERR_RESOURCE_EXHAUSTED) throw;
    alloc_error = err.what();
  }
  const int short_rank = env.bootstrap.first_rank_that(!alloc_error.empty(), Millis(remaining_ms(env)));
  if (short_rank >= 0) {
    if (rank == 0)
      record_every_pair("skipped", "does not fit in memory: " +
                                       (alloc_error.empty()
                                            ? fmt::format("rank {} could not allocate the sweep's buffers", short_rank)
                                            : alloc_error));
    owned.reset();  // as at the sweep's end: the buffers go first and the ranks leave together
    env.bootstrap.barrier(Millis(remaining_ms(env)));
    return;
  }
  SweepBuffers& bufs = *owned;
  bufs.fill_send(e.seed, rank, largest, 0);
  TraceRecorder& trace = trace_of(env);
  std::vector<int32_t> trace_case(cases.size(), -1);  // per size
  for (size_t s = 0; s < cases.size(); ++s)
    trace_case[s] = trace.add_case(fmt::format("all_pairs {} B", cases[s].bytes), trace_case_args(e, cases[s]));
  // Only the pair's ranks have an interval; the others' spans would be the wait for them.
  auto traced = [&](TracePhase phase, const AllPairsConfig& cfg, int rep, const Interval& t) {
    if (trace.on() && (rank == cfg.src || rank == cfg.dst))
      trace.transfer(phase, trace_case[cfg.size_index], cfg.src, cfg.dst, rep, t.start_ns, t.end_ns);
  };

  // Checked transfer (untimed): the receiver zeroes its buffer first (and writes the guards
  // beside the message) and counts bytes that differ from the sender's payload. Once before the
  // warm-up, once after the repetitions with another payload (generation 1, every rank's send
  // buffer refilled first).
  std::vector<ByteCheck> wrong(configs.size());
  auto checked_pass = [&](CheckStage stage) {
    const uint32_t generation = stage == CheckStage::AfterTiming ? 1 : 0;
    if (generation != 0) bufs.fill_send(e.seed, rank, largest, generation);
    for (size_t k = 0; k < configs.size(); ++k) {
      const AllPairsConfig& cfg = configs[k];
      const CaseSpec& spec = cases[cfg.size_index];
      if (rank == cfg.dst) bufs.prepare_receive(spec.bytes, generation);
      traced(TracePhase::Check, cfg, -1, transfer(env, cfg, spec, bufs));
      if (rank == cfg.dst)
        check_bytes(e.seed, cfg.src, generation, bufs.received(spec.bytes), spec.bytes, stage, wrong[k]);
    }
  };
  if (e.check) checked_pass(CheckStage::FirstIteration);
  for (size_t k = 0; k < configs.size(); ++k)
    for (int w = 0; w < e.warmup; ++w)
      traced(TracePhase::WarmUp, configs[k], -1, transfer(env, configs[k], cases[configs[k].size_index], bufs));
  trace.flush();

  const int reps = std::max(1, e.iterations);
  std::vector<Interval> mine(configs.size()), everyone(rank == 0 ? configs.size() * static_cast<size_t>(world) : 0);
  std::vector<std::vector<double>> samples_us(rank == 0 ? configs.size() : 0);
  std::vector<std::vector<double>> rank_sum_us(rank == 0 ? configs.size() : 0, std::vector<double>(2, 0.0));
  for (int rep = 0; rep < reps; ++rep) {
    sink.progress(fmt::format("all_pairs repetition {}/{} ({} transfers)", rep + 1, reps, configs.size()));
    for (size_t k = 0; k < configs.size(); ++k) mine[k] = transfer(env, configs[k], cases[configs[k].size_index], bufs);
    settle_backend(env);  // before anything slow: the last transfer's peer may still wait on us
    for (size_t k = 0; k < configs.size(); ++k) traced(TracePhase::Transfer, configs[k], rep, mine[k]);
    trace.flush();
    env.bootstrap.gather(mine.data(), mine.size() * sizeof(Interval), everyone.data(), 0, Millis(remaining_ms(env)));
    if (rank != 0) continue;
    std::vector<TransferLogEntry> log;
    log.reserve(configs.size());
    for (size_t k = 0; k < configs.size(); ++k) {
      const AllPairsConfig& cfg = configs[k];
      const Interval s = everyone[static_cast<size_t>(cfg.src) * configs.size() + k];
      const Interval d = everyone[static_cast<size_t>(cfg.dst) * configs.size() + k];
      const int64_t duration = transfer_duration_ns(one_clock(env, cfg), {s.start_ns, s.end_ns, s.monotonic_ns},
                                                    {d.start_ns, d.end_ns, d.monotonic_ns});
      samples_us[k].push_back(static_cast<double>(duration) / 1e3);
      rank_sum_us[k][0] += static_cast<double>(s.end_ns - s.start_ns) / 1e3;
      rank_sum_us[k][1] += static_cast<double>(d.end_ns - d.start_ns) / 1e3;
      // The interval the sample is: from the sender's post, unless the receiver's own time was it.
      const bool receivers = !one_clock(env, cfg) && duration > s.end_ns - s.start_ns;
      const int64_t start = receivers ? d.start_ns : s.start_ns;
      log.push_back({cfg.id, cfg.src, cfg.dst, cases[cfg.size_index].bytes, rep, start, start + duration, duration,
                     receivers ? cfg.dst : cfg.src});
    }
    sink.transfers(log);
  }

  if (e.check) {
    checked_pass(CheckStage::AfterTiming);
    settle_backend(env);
  }
  // As at the end of a case (case_runner.cpp): the buffers go first and the ranks leave together.
  owned.reset();
  std::vector<ByteCheck> all_wrong(rank == 0 ? configs.size() * static_cast<size_t>(world) : 0);
  env.bootstrap.gather(wrong.data(), wrong.size() * sizeof(ByteCheck), all_wrong.data(), 0, Millis(remaining_ms(env)));
  env.bootstrap.barrier(Millis(remaining_ms(env)));
  if (rank != 0) return;
  // Records in (size, src, dst) order: the order people read matrices in.
  std::vector<size_t> order(configs.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const auto& a = configs[x];
    const auto& b = configs[y];
    return std::tie(a.size_index, a.src, a.dst) < std::tie(b.size_index, b.src, b.dst);
  });
  for (size_t k : order) {
    const AllPairsConfig& cfg = configs[k];
    const CaseSpec& spec = cases[cfg.size_index];
    CaseRecord r = make_case_record(e, spec);
    r.src = cfg.src;
    r.dst = cfg.dst;
    if (one_clock(env, cfg)) r.rank_aggregation = std::string(kSenderToArrival);
    r.iterations = reps;
    r.samples_us = samples_us[k];
    r.time_us = summarize(r.samples_us);
    // Each rank's own mean, as for collectives: only src and dst take part, the others are 0.
    r.rank_mean_us.assign(static_cast<size_t>(world), 0.0);
    r.rank_mean_us[static_cast<size_t>(cfg.src)] = rank_sum_us[k][0] / reps;
    r.rank_mean_us[static_cast<size_t>(cfg.dst)] = rank_sum_us[k][1] / reps;
    const Bandwidth bw = bandwidth(spec.op, spec.bytes, world, r.time_us.mean);
    r.algbw_gbps = bw.algbw_gbps;
    r.busbw_gbps = bw.busbw_gbps;
    if (e.check) {
      const ByteCheck& b = all_wrong[static_cast<size_t>(cfg.dst) * configs.size() + k];
      r.wrong = b.wrong;
      if (b.wrong > 0) {
        const auto where = static_cast<CheckedBuffer>(b.buffer);
        const auto stage = check_stage_name(static_cast<CheckStage>(b.check));
        const std::string outside = outside_text(checked_buffer_name(where), static_cast<uint64_t>(b.first_index), "its");
        r.first_wrong = WrongElement{cfg.dst, static_cast<uint64_t>(b.first_index),
                                     outside.empty() ? static_cast<double>(b.expected) : std::nan(""),
                                     static_cast<double>(b.got), std::string(stage),
                                     std::string(checked_buffer_name(where))};
        r.status = "failed";
        r.reason = outside.empty()
                       ? fmt::format("wrong results: {} byte{} differ (first: rank {}, byte {}, expected {}, got {}, {} check)",
                                     b.wrong, b.wrong == 1 ? "" : "s", cfg.dst, b.first_index, b.expected, b.got, stage)
                       : fmt::format("wrong results: {} byte{} differ (first: rank {} {}; {} check)", b.wrong,
                                     b.wrong == 1 ? "" : "s", cfg.dst, outside, stage);
      }
    }
    sink.record(std::move(r));
  }
}

}  // namespace commbench
