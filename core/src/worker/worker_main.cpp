#include "worker/worker_main.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <iterator>
#include <sstream>
#include <optional>
#include <string>

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include "bootstrap/collectives.h"
#include "bootstrap/store.h"
#include "common/failure_kind.h"
#include "commbench/sdk/dtypes.hpp"
#include "common/memory_staging.h"
#include "device/gpu_binding.h"
#include "device/gpu_device.h"
#include "device/gpu_facts.h"
#include "observe/host_metadata.h"
#include "measure/all_pairs.h"
#include "measure/case_runner.h"
#include "measure/clock_sync.h"
#include "measure/host_timer.h"
#include "measure/nvtx_ranges.h"
#include "plan/plan.h"
#include "plugin/loader.h"
#include "plugin/plugin_error.h"
#include "plugin/backend_session.h"
#include "worker/heartbeat.h"
#include "plugin/host_services.h"
#include "worker/gpu_sharing.h"
#include "worker/memory_footprint.h"
#include "worker/result_channel.h"
#include "workload/memory_run.h"
#include "workload/workload_case.h"

namespace po = boost::program_options;

namespace commbench {
namespace {

struct WorkerArgs {
  int rank = 0, world = 1, local_rank = 0, local_world = 1;
  std::string store, plugin;
  int result_fd = 3;
  int agent_pid = 0;
  std::string trace_file;  // empty: tracing off
  // Hosts of a world that spans several (bootstrap/host_route.h): this rank's host, their number,
  // and this host's ranks ("0,4,8"). hosts = 1: every allgather through the job's store.
  int host_index = 0, hosts = 1;
  std::string host_ranks;
  bool wrapped = false;  // started by a profiler the agent started: its parent is not the agent
  bool own_cpus = false;  // the agent bound this rank to CPUs no other local rank has (cpu_binding)
};

WorkerArgs parse_args(int argc, char** argv) {
  WorkerArgs a;
  po::options_description d("worker");
  d.add_options()("rank", po::value(&a.rank)->required())("world", po::value(&a.world)->required())(
      "local-rank", po::value(&a.local_rank))("local-world", po::value(&a.local_world))(
      "store", po::value(&a.store)->required())("plugin", po::value(&a.plugin)->required())(
      "result-fd", po::value(&a.result_fd))("agent-pid", po::value(&a.agent_pid))(
      "trace-file", po::value(&a.trace_file))("host-index", po::value(&a.host_index))(
      "hosts", po::value(&a.hosts))("host-ranks", po::value(&a.host_ranks))(
      "wrapped", po::bool_switch(&a.wrapped))("own-cpus", po::bool_switch(&a.own_cpus));
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  po::notify(vm);
  return a;
}

// What kind of failure an exception is, for the agent (common/failure_kind.h): from the plugin's
// status, or the store's own code; never from the message.
FailureKind kind_of_exception(const std::exception& e) {
  if (const auto* p = dynamic_cast<const PluginError*>(&e)) return failure_kind_of(p->status());
  if (const auto* s = dynamic_cast<const StoreError*>(&e))
    return s->code() == StoreError::Code::Timeout ? FailureKind::kTimeout : FailureKind::kStore;
  return FailureKind::kOther;
}

// The run's `device` key; else the backend's own `device` option (the NCCL plugins take one), so
// that core and plugin bind the same GPU whichever the user wrote.
std::optional<int> requested_device(const Execution& exec) {
  if (exec.device) return exec.device;
  return device_option(exec.options);
}

int32_t ms_until(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now()).count();
  return static_cast<int32_t>(std::clamp<int64_t>(left, 1, INT32_MAX));
}

}  // namespace

int worker_main(int argc, char** argv) {
  WorkerArgs args;
  try {
    args = parse_args(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "commbench worker: " << e.what() << " (workers are started by `commbench run`)\n";
    return 2;
  }
  // A worker never outlives its agent: if the agent is killed (kill -9, a launcher tearing the
  // job down), the kernel kills the worker too, instead of leaving it blocked on its peers.
  if (args.agent_pid > 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Under a profiler the parent is the profiler (it dies with its group); otherwise the agent
    // must still be the parent, or it died before prctl.
    if (args.wrapped ? ::kill(args.agent_pid, 0) != 0 : ::getppid() != args.agent_pid) return kWorkerExitFailed;
  }
  // A peer that went away must reach the plugin as a write error (EPIPE: a "remote" failure),
  // not kill this rank with SIGPIPE, which would make it look like the cause. Set here because
  // the disposition a worker inherits depends on what its agent did before spawning it.
  ::signal(SIGPIPE, SIG_IGN);
  ResultChannel out(args.result_fd, args.rank);
  Heartbeat heartbeat(out);
  std::string phase = "startup";
  std::vector<int> waiting_for;  // ranks the last bootstrap collective waited for in vain
  // Declared before the session and the device: the store connection and the bootstrap outlive
  // them, and a rank ending unavailable (from any plugin call) can still close the bootstrap.
  std::unique_ptr<StoreClient> store;
  std::unique_ptr<Bootstrap> bootstrap_owner;
  // A rank that cannot run here still ends like the others: a host's first rank keeps its store
  // up until the ranks that read from it are done (bounded: they may have failed instead).
  const auto end_unavailable = [&](int32_t close_ms) {
    try {
      if (bootstrap_owner) bootstrap_owner->close(Millis(close_ms));
    } catch (const std::exception&) {
    }
    return kWorkerExitUnavailable;
  };
  // Declared before the session: destroyed after it, so the backend is gone before the stream.
  std::unique_ptr<GpuDevice> gpu;
  std::unique_ptr<BackendSession> session;
  // The execution's time limit, once the spec is read: a wait that ran into it timed out after
  // what was left of it (1 ms), which says nothing of the limit itself.
  std::optional<std::chrono::steady_clock::time_point> exec_deadline;
  double exec_timeout_s = 0;
  // A failure ends the rank: what it was goes to the agent as data, then the backend is aborted.
  const auto fail = [&](const std::exception& e) {
    const FailureKind kind = kind_of_exception(e);
    std::string message = e.what();
    const bool out_of_time = kind == FailureKind::kTimeout && exec_deadline &&
                             std::chrono::steady_clock::now() + std::chrono::milliseconds(100) >= *exec_deadline;
    if (out_of_time)
      message = fmt::format("the execution's time limit ({:g} s: the run's `timeout`, or sized to its cases when "
                            "unset) ran out during {}; raise `timeout` if the cases need longer (this rank's "
                            "last wait: {})",
                            exec_timeout_s, phase, e.what());
    nlohmann::json error{{"type", "error"}, {"phase", phase}, {"kind", failure_kind_name(kind)},
                         {"message", message}};
    // The limit of the whole execution, not a wait on a peer: the agent blames no rank for it.
    if (out_of_time) error["time_limit"] = true;
    // The plugin's own status code travels as data too (the kind is derived from it).
    if (const auto* p = dynamic_cast<const PluginError*>(&e)) error["status"] = static_cast<int>(p->status());
    // Who this rank was waiting for when its bootstrap collective (its own, or the plugin's
    // through the host services) timed out: the agent blames them, not this rank.
    if (!waiting_for.empty()) error["waiting_for"] = waiting_for;
    out.send(std::move(error));
    std::cerr << fmt::format("commbench worker rank {}: {} failed: {}\n", args.rank, phase, message);
    if (session) session->abort();
    // Work may still be queued on the stream (a hung op): destroying the device would wait for
    // it. The process exits now; the driver reclaims everything.
    (void)gpu.release();
    return kWorkerExitFailed;
  };
  try {
    const std::string spec_text{std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>()};
    const Execution exec = nlohmann::json::parse(spec_text).get<Execution>();
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(exec.timeout_s * 1000));
    exec_deadline = deadline;
    exec_timeout_s = exec.timeout_s;

    phase = "connect to store";
    const auto colon = args.store.rfind(':');
    const char* token = std::getenv("COMMBENCH_STORE_TOKEN");
    store = StoreClient::connect(args.store.substr(0, colon),
                                      static_cast<uint16_t>(std::stoi(args.store.substr(colon + 1))),
                                      Millis(ms_until(deadline)), token ? token : "");
    bootstrap_owner = std::make_unique<Bootstrap>(*store, fmt::format("exec{}", exec.index), args.rank, args.world);
    Bootstrap& bootstrap = *bootstrap_owner;
    bootstrap.record_missing_ranks_in(&waiting_for);
    if (args.hosts > 1) {
      HostLayout layout{args.host_index, args.hosts, {}};
      std::istringstream list(args.host_ranks);
      for (std::string r; std::getline(list, r, ',');) layout.ranks.push_back(std::stoi(r));
      bootstrap.route_through_hosts(std::move(layout), token ? token : "");
    }

    phase = "timer calibration";
    out.phase(phase);
    HostTimer::get();  // before anything is timed; a bad COMMBENCH_TIMER fails here, named
    TraceRecorder trace;
    std::unique_ptr<TraceRecorder> trace_on;
    if (!args.trace_file.empty()) trace_on = std::make_unique<TraceRecorder>(args.trace_file, args.rank, exec.index);
    TraceRecorder& tr = trace_on ? *trace_on : trace;

    // Every rank's clock against rank 0's, now and again at the end (measure/clock_sync.h); rank
    // 0's agent records both with the execution and aligns the logs and traces with them.
    phase = "clock estimate";
    out.phase(phase);
    ClockOffsets clock_start;
    {
      TraceScope t(tr, TracePhase::ClockSync);
      clock_start = estimate_clock_offsets(bootstrap, "start", Millis(ms_until(deadline)));
    }
    if (args.rank == 0) out.send({{"type", "clock"}, {"rounds", clock_start.rounds}, {"start", clock_start.ranks}});
    phase = "load plugin";
    out.phase(phase);
    static const LoadedPlugin plugin = load_plugin(args.plugin);
    const bool shared_gpu = exec.memory == CB_MEM_CUDA && exec.oversubscribe_gpu;
    HostServices host(bootstrap, args.local_rank, args.local_world, exec.options,
                      (shared_gpu ? CB_HOST_SHARED_DEVICE : 0) | (args.own_cpus ? CB_HOST_OWN_CPUS : 0));

    // CUDA only when the execution asks for device memory: the runtime is loaded, the device
    // bound and the stream created before the backend's init, so that a backend using CUDA
    // finds its device current and the footprint below covers its init.
    std::string gpu_unusable;
    if (exec.memory == CB_MEM_CUDA) {
      phase = "GPU setup";
      out.phase(phase);
      try {
        gpu = GpuDevice::open(args.local_rank, args.local_world, requested_device(exec), shared_gpu, &gpu_unusable);
      } catch (const GpuBindingError& e) {
        out.send({{"type", "unavailable"}, {"reason", e.what()}});
        return end_unavailable(std::min(ms_until(deadline), 10000));
      }
      // Before the backend's init: a library that refuses two ranks on one GPU would fail the
      // execution instead of saying why it cannot run here.
      if (const std::string why = gpu_sharing_problem(bootstrap, gpu.get(), shared_gpu, Millis(ms_until(deadline)));
          !why.empty()) {
        out.send({{"type", "unavailable"}, {"reason", why}});
        return end_unavailable(std::min(ms_until(deadline), 10000));
      }
    }
    MemoryFootprint footprint;
    footprint.host_rss_before_init = resident_bytes();
    if (gpu) {
      footprint.device_total = gpu->total_bytes();
      footprint.device_free_before_comm = gpu->free_bytes();
    }
    session = std::make_unique<BackendSession>(plugin.api);

    phase = "init";
    out.phase(phase);
    {
      TraceScope t(tr, TracePhase::Init);
      nvtx::Range n("init");
      session->init(host.get());  // CB_ERR_UNAVAILABLE: the handler at the end, as from any call
    }
    phase = "communicator creation";
    out.phase(phase);
    {
      TraceScope t(tr, TracePhase::Rendezvous);
      nvtx::Range n("rendezvous");
      session->create_comm(ms_until(deadline));
    }
    footprint.host_rss_after_init = resident_bytes();
    if (gpu) footprint.device_free_after_comm = gpu->free_bytes();

    nlohmann::json meta{{"pid", ::getpid()}, {"plugin", args.plugin}};
    char hostname[256] = {0};
    ::gethostname(hostname, sizeof(hostname) - 1);
    meta["host"] = hostname;
    // How this world's bootstrap collectives travel (docs/bootstrap.md, "Host tree").
    meta["bootstrap"] = {{"hosts", args.hosts}, {"host_index", args.host_index},
                         {"allgather", args.hosts > 1 ? "host tree" : "job store"},
                         {"broadcast_barrier", args.hosts > 1 ? "host leaders" : "job store"},
                         {"gather", args.hosts > 1 ? "host leaders" : "job store"}};
    meta["timer"] = HostTimer::get().describe();
    meta["timer_resolution_ns"] = HostTimer::get().resolution_ns();
    // NVTX: built or not, and whether ranges go anywhere (a profiler injected itself).
    meta["nvtx"] = fmt::format("{}{}", nvtx::build_state(),
                               nvtx::active() ? ", ranges emitted (a tool is attached)" : "");
    meta["binding"] = process_binding();  // metadata/rank<N>.json
    for (const auto& [k, v] : session->metadata()) meta["backend"][k] = v;
    meta["memory_footprint"] = footprint.to_json();
    if (gpu) {
      meta["gpu"] = gpu_identity(*gpu);
      meta["gpu"]["telemetry_start"] = gpu_telemetry(*gpu);
      if (args.local_rank == 0) meta["gpu_topology"] = gpu_topology();  // once per host
    } else if (exec.memory == CB_MEM_CUDA) {
      meta["gpu"] = {{"available", false}, {"reason", gpu_unusable}};
    }
    out.send({{"type", "meta"}, {"metadata", meta}});

    const cb_capabilities caps = session->capabilities();
    // The stream-ordered backends' default is CUDA events; anything else is timed on the host.
    const bool stream_ordered = gpu && (caps.flags & CB_CAP_STREAM_ORDERED);
    CaseEnvironment env{*session, bootstrap, exec, caps, deadline, plan_memory(caps, exec.memory),
                        gpu.get(), gpu_unusable,
                        stream_ordered ? exec.gpu_timing : TimingMethod::Host, 0, args.local_world, &tr,
                        clock_start.clock_group};
    tr.flush();
    // all_pairs cases are one sweep (shuffled over pairs and sizes together), run first.
    std::vector<CaseSpec> sweep;
    for (const CaseSpec& c : exec.cases)
      if (c.op == OpKind::AllPairs) sweep.push_back(c);
    if (!sweep.empty()) {
      phase = "all_pairs sweep";
      out.phase(phase);
      AllPairsSink sink;
      sink.record = [&](CaseRecord rec) {
        nlohmann::json j = rec;
        j["type"] = "case";
        out.send(std::move(j));
      };
      sink.transfers = [&](const std::vector<TransferLogEntry>& entries) {
        out.send({{"type", "transfers"}, {"entries", entries}});
      };
      sink.progress = [&](const std::string& what) {
        phase = what;
        out.phase(what);
      };
      run_all_pairs(env, sweep, sink);
    }
    for (size_t i = 0; i < exec.cases.size(); ++i) {
      const CaseSpec& c = exec.cases[i];
      if (c.op == OpKind::AllPairs) continue;
      phase = fmt::format("case {}/{} ({})", i + 1, exec.cases.size(), describe_case(c));
      out.phase("case", static_cast<int>(i), describe_case(c));
      std::optional<CaseRecord> rec = run_case(env, c);
      // The case's buffers are freed: what is still taken beyond the start is the backend's.
      if (gpu) footprint.note_device_free_after_case(gpu->free_bytes());
      tr.flush();  // after the case, outside its timed region
      if (rec) {
        nlohmann::json j = *rec;
        j["type"] = "case";
        j["case_index"] = i;
        out.send(std::move(j));
      }
    }
    if (exec.workload == WorkloadKind::Memory) {
      workload::MemoryRunSpec spec{*exec.model, exec.batch_sizes, exec.workload_dtype, exec.optimizer,
                                   exec.sharding == Sharding::Fsdp};
      if (spec.batch_sizes.empty()) spec.batch_sizes = {exec.batch_size};
      workload::run_memory_workload(
          exec, spec, gpu.get(), footprint, bootstrap, Millis(ms_until(deadline)),
          [&](const std::string& what) {
            phase = what;
            out.phase(what);
          },
          [&](nlohmann::ordered_json rec) {
            out.send({{"type", "record"}, {"kind", "memory"}, {"record", nlohmann::json(rec)}});
          });
    } else if (exec.workload == WorkloadKind::DataParallel) {
      phase = "workload compute calibration";
      out.phase(phase);
      // Memory held by the run beside the model estimate (docs/workloads.md, "Memory of a step run").
      workload::MemoryMeasured held;
      held.before_buffers = workload::memory_now(gpu.get());
      const auto compute = workload::make_step_compute(env);
      held.after_buffers = held.after_workload = workload::memory_now(gpu.get());
      for (size_t i = 0; i < exec.overlap.size(); ++i) {
        const std::string what = fmt::format("{} {} overlap {}", exec.model->name, sharding_name(exec.sharding),
                                             exec.overlap[i] ? "on" : "off");
        phase = fmt::format("workload case {}/{} ({})", i + 1, exec.overlap.size(), what);
        out.phase("case", static_cast<int>(i), what);
        std::optional<CaseRecord> rec = workload::run_workload_case(env, exec.overlap[i], compute, &held.after_workload);
        tr.flush();
        if (rec) {
          nlohmann::json j = *rec;
          j["type"] = "case";
          j["case_index"] = i;
          out.send(std::move(j));
        }
      }
      held.host_rss_peak = peak_resident_bytes();
      const workload::MemoryCase mc = workload::memory_case_of(exec, *exec.model, "data_parallel", exec.batch_size,
                                                               exec.workload_dtype, exec.optimizer,
                                                               exec.sharding == Sharding::Fsdp);
      nlohmann::ordered_json mrec = workload::memory_record(exec, mc, footprint, held, bootstrap, Millis(ms_until(deadline)));
      if (args.rank == 0) out.send({{"type", "record"}, {"kind", "memory"}, {"record", nlohmann::json(mrec)}});
    }
    phase = "finalisation";
    out.phase(phase);
    tr.clear_case();
    {
      TraceScope t(tr, TracePhase::ClockSync);
      const ClockOffsets clock_end = estimate_clock_offsets(bootstrap, "end", Millis(ms_until(deadline)));
      if (args.rank == 0)
        out.send({{"type", "clock"}, {"rounds", clock_end.rounds}, {"start", clock_start.ranks}, {"end", clock_end.ranks}});
    }
    tr.flush();
    // The metadata again, completed: the host's peak RSS, and on a GPU telemetry at the end and
    // the buffers' peak footprint (the agent keeps each rank's last metadata message).
    footprint.host_rss_peak = peak_resident_bytes();
    footprint.buffers_device_peak = env.buffers_device_peak;
    meta["memory_footprint"] = footprint.to_json();
    if (gpu) meta["gpu"]["telemetry_end"] = gpu_telemetry(*gpu);
    out.send({{"type", "meta"}, {"metadata", meta}});
    session->shutdown();
    bootstrap.close(Millis(ms_until(deadline)));  // no host's store goes while others read it
    out.send({{"type", "done"}});
    return 0;
  } catch (const PluginError& e) {
    if (!e.skips_backend()) return fail(e);
    // UNAVAILABLE skips the backend for this run wherever it comes from (backend.h): init, or a
    // communicator or an op the backend finds it cannot run here after all.
    // With the plugin's status: GPU setup's unavailability above has none (no plugin call).
    out.send({{"type", "unavailable"},
              {"reason", fmt::format("{} (during {})", e.what(), phase)},
              {"status", static_cast<int>(e.status())}});
    std::cerr << fmt::format("commbench worker rank {}: unavailable during {}: {}\n", args.rank, phase, e.what());
    if (session) session->abort();
    (void)gpu.release();  // work may still be queued on its stream, as in fail()
    return end_unavailable(10000);
  } catch (const std::exception& e) {
    return fail(e);
  }
}

}  // namespace commbench
