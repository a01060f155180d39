#include "plan/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "experiment/durations.h"
#include "stats/bandwidth.h"

#include "commbench/sdk/dtypes.hpp"

namespace commbench {

double default_timeout_s(const RunSpec& run, int world, const std::vector<CaseSpec>& cases) {
  // A pessimistic 50 MB/s for the bytes every rank moves (slow TCP between loaded hosts), plus
  // 10 ms per operation and min_time, over all cases, on top of 10 minutes for the phases that
  // do not depend on size (start-up, rendezvous, communicator creation, finalisation).
  double s = 600;
  const double ops = run.warmup + std::max(run.iterations, 1) + 1;
  for (const CaseSpec& c : cases) {
    const double moved = algbw_bytes(c.op, c.bytes, world) * 2.0;
    const double per_op = moved / 50e6 + 0.01;
    const double n = c.op == OpKind::AllPairs ? ops * world * (world - 1) : ops;
    s += n * per_op + run.min_time_s * (run.min_time_s > 0 ? 2 : 0);
    if (run.target_cv > 0) s += 2 * run.max_time_s;  // rounds until the CV target
  }
  // Capped like a written timeout: an exabyte size would otherwise give a deadline beyond what
  // steady_clock can represent, and the run would time out at once.
  return std::min(s, kMaxDurationS);
}

int expected_records(const Execution& exec) {
  if (exec.workload == WorkloadKind::Memory) return 0;  // memory records, not cases
  if (exec.workload != WorkloadKind::None) return static_cast<int>(exec.overlap.size());
  int n = 0;
  for (const CaseSpec& c : exec.cases)
    n += c.op == OpKind::AllPairs ? exec.world_size * (exec.world_size - 1) : 1;
  return n;
}

namespace {

// A workload's limit when the run sets none: 10 minutes, plus per overlap value 3 kinds of steps
// (whole, compute only, communication only) of the compute asked for (at most) and the
// gradients at a pessimistic 50 MB/s, twice (FSDP moves parameters and gradients).
double workload_timeout_s(const RunSpec& run) {
  const double params = run.model ? static_cast<double>(run.model->parameters()) : 0;
  const double comm_s = 2 * params * sdk::dtype_size(run.dtypes.front()) / 50e6 + 0.01 * 200;
  const double compute_s = run.compute == ComputeSource::Time ? run.compute_ms / 1e3 : 60;
  const double steps = static_cast<double>(run.warmup + 3 * run.steps);
  return std::min(600 + static_cast<double>(run.overlap.size()) * steps * (comm_s + 2 * compute_s), kMaxDurationS);
}

// Cases of one op, sizes innermost so each (op, dtype, redop, placement) group reads as a table.
// Strong scaling: each size is the job's total, divided among `world` ranks as the op's
// algbw multiple says (run_resolve.cpp checked that it divides evenly).
void add_cases(const RunSpec& run, OpKind op, int world, std::vector<CaseSpec>& out) {
  const OpInfo& info = op_info(op);
  if (op == OpKind::Barrier) {
    out.push_back(CaseSpec{op, 0, 0, CB_DTYPE_UINT8, std::nullopt, Placement::OutOfPlace, 0});
    return;
  }
  std::vector<std::optional<cb_redop>> redops;
  if (info.reduction)
    for (cb_redop r : run.redops) redops.emplace_back(r);
  else
    redops.emplace_back(std::nullopt);
  for (cb_dtype dtype : run.dtypes) {
    const size_t esize = sdk::dtype_size(dtype);
    for (const auto& redop : redops) {
      for (Placement placement : run.placements) {
        if (placement == Placement::InPlace && !info.in_place) continue;
        for (const SizeSpec& size : run.sizes) {
          CaseSpec c;
          c.op = op;
          c.bytes = size.bytes(esize);
          if (run.scaling == ScalingMode::Strong) {
            c.job_bytes = c.bytes;
            c.bytes /= strong_scaling_share(op, world);
          }
          c.count = c.bytes / esize;
          c.dtype = dtype;
          c.redop = redop;
          c.placement = placement;
          c.root = info.rooted ? run.root : 0;
          out.push_back(c);
        }
      }
    }
  }
}

}  // namespace

std::vector<Execution> plan_job(const Experiment& exp) {
  std::vector<Execution> plan;
  for (const RunSpec& run : exp.runs) {
    // Repeats in rounds: a slow drift of the machine spreads over every configuration's
    // repeats instead of landing on one configuration's.
    for (int repeat = 0; repeat < run.repeats; ++repeat) {
      for (const std::string& backend : run.backends) {
        for (int world : run.world_sizes) {
          std::vector<CaseSpec> cases;
          for (OpKind op : run.ops) add_cases(run, op, world, cases);
          Execution e;
          static_cast<RunSettings&>(e) = run;
          e.index = static_cast<int>(plan.size());
          e.run_index = run.index;
          e.repeat = repeat;
          e.run = run.name;
          e.experiment = exp.name;
          e.backend = backend;
          e.world_size = world;
          e.timeout_s = run.timeout_given ? run.timeout_s : default_timeout_s(run, world, cases);
          e.seed = exp.seed;
          e.env = run.env;
          if (auto it = run.options.find(backend); it != run.options.end()) e.options = it->second;
          e.cases = cases;
          if (run.workload != WorkloadKind::None) {
            e.workload_dtype = run.dtypes.front();
            // Strong scaling: batch_size is the global batch and compute_ms the compute of its step
            // on one rank; each of the N ranks gets 1/N of both (run_resolve.cpp checked N | batch).
            if (run.workload == WorkloadKind::DataParallel && run.scaling == ScalingMode::Strong) {
              e.batch_size = run.batch_size / world;
              e.compute_ms = run.compute_ms / world;
            }
            if (!run.timeout_given) e.timeout_s = workload_timeout_s(run);
          }
          plan.push_back(std::move(e));
        }
      }
    }
  }
  return plan;
}

std::string case_dtype_name(const CaseSpec& c) {
  const OpInfo& info = op_info(c.op);
  if (info.send == PerWorld::Zero && info.recv == PerWorld::Zero) return "";
  return std::string(sdk::dtype_name(c.dtype));
}

std::string describe_case(const CaseSpec& c) {
  const std::string dtype = case_dtype_name(c);
  if (dtype.empty()) return fmt::format("{} {} B", op_info(c.op).name, c.bytes);
  return fmt::format("{} {} B {}{}{} {}", op_info(c.op).name, c.bytes, dtype, c.redop ? " " : "",
                     c.redop ? sdk::redop_name(*c.redop) : "", placement_name(c.placement));
}

void to_json(nlohmann::json& j, const Execution& e) {
  nlohmann::json cases = nlohmann::json::array();
  for (const CaseSpec& c : e.cases) {
    nlohmann::json jc{{"op", op_info(c.op).name}, {"bytes", c.bytes}, {"count", c.count},
                      {"dtype", sdk::dtype_name(c.dtype)},
                      {"placement", placement_name(c.placement)}, {"root", c.root}};
    if (c.redop) jc["redop"] = sdk::redop_name(*c.redop);
    if (c.job_bytes) jc["job_bytes"] = c.job_bytes;
    cases.push_back(std::move(jc));
  }
  j = nlohmann::json{{"index", e.index}, {"run_index", e.run_index}, {"repeat", e.repeat}, {"run", e.run},
                     {"experiment", e.experiment}, {"backend", e.backend},
                     {"world_size", e.world_size}, {"seed", e.seed}, {"env", e.env},
                     {"options", e.options}, {"cases", std::move(cases)},
                     {"workload_dtype", sdk::dtype_name(e.workload_dtype)}};
  settings_to_json(e, j);
}

void from_json(const nlohmann::json& j, Execution& e) {
  e.index = j.at("index");
  e.run_index = j.at("run_index");
  e.repeat = j.value("repeat", 0);
  e.run = j.at("run");
  e.experiment = j.at("experiment");
  e.backend = j.at("backend");
  e.world_size = j.at("world_size");
  e.seed = j.at("seed");
  e.env = j.at("env").get<std::map<std::string, std::string>>();
  e.options = j.at("options").get<std::map<std::string, std::string>>();
  settings_from_json(j, e);
  if (j.contains("workload_dtype")) e.workload_dtype = sdk::parse_dtype(j.at("workload_dtype").get<std::string>()).value();
  e.cases.clear();
  for (const auto& jc : j.at("cases")) {
    CaseSpec c;
    c.op = parse_op_kind(jc.at("op").get<std::string>()).value();
    c.bytes = jc.at("bytes");
    c.count = jc.at("count");
    c.dtype = sdk::parse_dtype(jc.at("dtype").get<std::string>()).value();
    if (jc.contains("redop")) c.redop = sdk::parse_redop(jc.at("redop").get<std::string>()).value();
    c.placement = jc.at("placement") == "in_place" ? Placement::InPlace : Placement::OutOfPlace;
    c.root = jc.at("root");
    c.job_bytes = jc.value("job_bytes", uint64_t{0});
    e.cases.push_back(c);
  }
}

}  // namespace commbench
