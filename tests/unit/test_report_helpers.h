// Shared fixtures of the report tests: a temporary folder, record builders, file readers and a
// small RFC 4180 reader that checks what CsvReporter writes.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "measure/case_record.h"
#include "report/reporter.h"
#include "stats/summary.h"
#include "test_common.h"

namespace commbench::test {

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> read_lines(const std::filesystem::path& p) {
  std::vector<std::string> lines;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A measured case whose every iteration took `time_us` except for a little spread.
inline CaseRecord make_case(const std::string& backend, const std::string& op, uint64_t bytes,
                            double time_us, int world = 4) {
  CaseRecord r;
  r.experiment = "exp";
  r.run = "sweep";
  r.run_index = 0;
  r.backend = backend;
  r.world_size = world;
  r.op = op;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.dtype = "f32";
  r.redop = op == "allreduce" ? "sum" : "";
  r.placement = "out_of_place";
  r.memory = "host";
  r.total_bytes = (op == "allgather" || op == "reducescatter" || op == "alltoall" || op == "gather" ||
                   op == "scatter") ? bytes * static_cast<uint64_t>(world) : bytes;
  r.rank_aggregation = "avg";  // method "batch" is the record's default
  r.warmup = 2;
  r.iterations = 4;
  r.samples_us = {time_us * 0.99, time_us * 1.01, time_us * 0.99, time_us * 1.01};
  r.time_us = summarize(r.samples_us);
  r.rank_mean_us = std::vector<double>(static_cast<size_t>(world), time_us);
  r.algbw_gbps = double(bytes) / time_us / 1e3;
  r.busbw_gbps = r.algbw_gbps * 1.5;
  r.wrong = 0;
  return r;
}

// A data_parallel record of resnet50 DDP with overlap (report/scaling.h reads its `workload`).
inline CaseRecord make_workload_case(int world, int batch_per_rank, double samples_per_s, double step_us) {
  CaseRecord r;
  r.run = "w";
  r.backend = "gloo";
  r.op = "data_parallel";
  r.dtype = "f32";
  r.memory = "host";
  r.world_size = world;
  r.time_us.mean = step_us;
  r.workload = {{"model", "resnet50"}, {"sharding", "ddp"}, {"overlap", true}, {"batch_size", batch_per_rank},
                {"samples_per_s", samples_per_s}};
  return r;
}

inline CaseRecord make_unsupported(const std::string& backend, uint64_t bytes, std::string reason) {
  CaseRecord r = make_case(backend, "allreduce", bytes, 1);
  r.status = "unsupported";
  r.reason = std::move(reason);
  r.time_us = {};
  r.samples_us.clear();
  r.rank_mean_us.clear();
  r.algbw_gbps = r.busbw_gbps = 0;
  r.wrong = -1;
  return r;
}

inline ExecutionInfo make_exec(const std::string& backend, int index, int total, int cases,
                               int world = 4) {
  ExecutionInfo e;
  e.run_index = 0;
  e.run = "sweep";
  e.backend = backend;
  e.world_size = world;
  e.exec_index = index;
  e.exec_total = total;
  e.case_total = cases;
  return e;
}

// Splits CSV text into records of fields, honouring RFC 4180 quotes (commas, doubled quotes
// and line breaks inside quoted fields).
inline std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    any = true;
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
    } else if (c == '\n') {
      row.push_back(field);
      field.clear();
      rows.push_back(row);
      row.clear();
      any = false;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (any) {
    row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

}  // namespace commbench::test
