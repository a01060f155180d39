#include "workload/step_schedule.h"

#include <fmt/format.h>

namespace commbench::workload {
namespace {

// Each layer's fraction of the step's compute, forward and backward.
std::vector<double> layer_compute_shares(const Model& m) {
  const double total = m.forward_flops_per_sample();
  std::vector<double> out;
  for (const Layer& l : m.layers)
    out.push_back(total > 0 ? l.forward_flops_per_sample / total : 1.0 / static_cast<double>(m.layers.size()));
  return out;
}

StepAction compute_action(int layer, bool backward, double layer_share) {
  return StepAction{ActionKind::Compute, layer, backward, layer_share * (backward ? 2.0 / 3.0 : 1.0 / 3.0)};
}
StepAction post_action(int comm) { return StepAction{ActionKind::Post, comm, false, 0}; }
StepAction wait_action(int comm) { return StepAction{ActionKind::Wait, comm, false, 0}; }

StepPlan plan_ddp(const Model& m, bool overlap, uint64_t bucket_bytes, size_t elem_size) {
  StepPlan p;
  const std::vector<double> share = layer_compute_shares(m);
  const std::vector<Bucket> buckets = ddp_buckets(m, elem_size, bucket_bytes);
  std::vector<int> closes(m.layers.size(), -1);  // layer -> bucket whose last ready layer it is
  for (size_t b = 0; b < buckets.size(); ++b) {
    const Bucket& k = buckets[b];
    closes[static_cast<size_t>(k.layers.back())] = static_cast<int>(b);
    p.comms.push_back(CommOp{OpKind::Allreduce, k.elements, k.first_element, k.first_element,
                             fmt::format("bucket {} (layers {}..{})", b, k.layers.front(), k.layers.back())});
    p.comm_bytes += k.elements * elem_size;
  }
  p.send_elements = p.recv_elements = m.parameters();
  const int n = static_cast<int>(m.layers.size());
  for (int i = 0; i < n; ++i) p.actions.push_back(compute_action(i, false, share[static_cast<size_t>(i)]));
  for (int i = n - 1; i >= 0; --i) {
    p.actions.push_back(compute_action(i, true, share[static_cast<size_t>(i)]));
    if (overlap && closes[static_cast<size_t>(i)] >= 0) p.actions.push_back(post_action(closes[static_cast<size_t>(i)]));
  }
  for (int b = 0; b < static_cast<int>(buckets.size()); ++b) {
    if (!overlap) p.actions.push_back(post_action(b));
    p.actions.push_back(wait_action(b));
  }
  return p;
}

StepPlan plan_fsdp(const Model& m, bool overlap, size_t elem_size, int world) {
  StepPlan p;
  const std::vector<double> share = layer_compute_shares(m);
  const auto w = static_cast<uint64_t>(world);
  const int n = static_cast<int>(m.layers.size());
  // Flat buffers, padded per layer to a multiple of the world size as FSDP's flat parameters are:
  // send = shards (allgather input) then full gradients (reducescatter input); recv = full
  // parameters (allgather output) then gradient shards (reducescatter output).
  std::vector<uint64_t> shard(static_cast<size_t>(n)), shard_off(static_cast<size_t>(n)), full_off(static_cast<size_t>(n));
  uint64_t shards = 0, full = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t s = (m.layers[static_cast<size_t>(i)].parameters + w - 1) / w;
    shard[static_cast<size_t>(i)] = s;
    shard_off[static_cast<size_t>(i)] = shards;
    full_off[static_cast<size_t>(i)] = full;
    shards += s;
    full += s * w;
  }
  p.send_elements = shards + full;
  p.recv_elements = full + shards;
  // comm ids: allgather forward i, allgather backward i, reducescatter i (-1: layer without parameters).
  std::vector<int> ag_fwd(static_cast<size_t>(n), -1), ag_bwd(static_cast<size_t>(n), -1), rs(static_cast<size_t>(n), -1);
  for (int i = 0; i < n; ++i) {
    const auto u = static_cast<size_t>(i);
    if (shard[u] == 0) continue;
    const std::string& name = m.layers[u].name;
    ag_fwd[u] = static_cast<int>(p.comms.size());
    p.comms.push_back(CommOp{OpKind::Allgather, shard[u], shard_off[u], full_off[u], fmt::format("allgather {} (forward)", name)});
    ag_bwd[u] = static_cast<int>(p.comms.size());
    p.comms.push_back(CommOp{OpKind::Allgather, shard[u], shard_off[u], full_off[u], fmt::format("allgather {} (backward)", name)});
    rs[u] = static_cast<int>(p.comms.size());
    p.comms.push_back(CommOp{OpKind::Reducescatter, shard[u], shards + full_off[u], full + shard_off[u],
                             fmt::format("reducescatter {}", name)});
    p.comm_bytes += 2 * shard[u] * elem_size + shard[u] * w * elem_size;
  }
  auto post_if = [&](int c) { if (c >= 0) p.actions.push_back(post_action(c)); };
  auto wait_if = [&](int c) { if (c >= 0) p.actions.push_back(wait_action(c)); };
  if (overlap) {
    // Forward: layer i's parameters were prefetched while layer i-1 computed.
    if (n > 0) post_if(ag_fwd[0]);
    for (int i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      if (i + 1 < n) post_if(ag_fwd[u + 1]);
      wait_if(ag_fwd[u]);
      p.actions.push_back(compute_action(i, false, share[u]));
    }
    if (n > 0) post_if(ag_bwd[static_cast<size_t>(n - 1)]);
    for (int i = n - 1; i >= 0; --i) {
      const auto u = static_cast<size_t>(i);
      if (i > 0) post_if(ag_bwd[u - 1]);
      wait_if(ag_bwd[u]);
      p.actions.push_back(compute_action(i, true, share[u]));
      post_if(rs[u]);
    }
    for (int i = n - 1; i >= 0; --i) wait_if(rs[static_cast<size_t>(i)]);
  } else {
    for (int i = 0; i < n; ++i) {
      const auto u = static_cast<size_t>(i);
      post_if(ag_fwd[u]);
      wait_if(ag_fwd[u]);
      p.actions.push_back(compute_action(i, false, share[u]));
    }
    for (int i = n - 1; i >= 0; --i) {
      const auto u = static_cast<size_t>(i);
      post_if(ag_bwd[u]);
      wait_if(ag_bwd[u]);
      p.actions.push_back(compute_action(i, true, share[u]));
      post_if(rs[u]);
      wait_if(rs[u]);
    }
  }
  return p;
}

}  // namespace

std::vector<Bucket> ddp_buckets(const Model& m, size_t elem_size, uint64_t cap_bytes) {
  std::vector<uint64_t> offset(m.layers.size());
  uint64_t at = 0;
  for (size_t i = 0; i < m.layers.size(); ++i) {
    offset[i] = at;
    at += m.layers[i].parameters;
  }
  std::vector<Bucket> out;
  Bucket open;
  for (int i = static_cast<int>(m.layers.size()) - 1; i >= 0; --i) {
    const Layer& l = m.layers[static_cast<size_t>(i)];
    open.layers.push_back(i);
    open.elements += l.parameters;
    open.first_element = offset[static_cast<size_t>(i)];  // reverse order: the lowest so far
    if (open.elements * elem_size >= cap_bytes) {
      out.push_back(std::move(open));
      open = Bucket{};
    }
  }
  if (open.elements > 0) out.push_back(std::move(open));
  else if (!open.layers.empty() && !out.empty())  // leading layers without parameters
    out.back().layers.insert(out.back().layers.end(), open.layers.begin(), open.layers.end());
  return out;
}

StepPlan plan_step(const Model& m, Sharding sharding, bool overlap, uint64_t bucket_bytes, size_t elem_size,
                   int world) {
  return sharding == Sharding::Fsdp ? plan_fsdp(m, overlap, elem_size, world)
                                    : plan_ddp(m, overlap, bucket_bytes, elem_size);
}

}  // namespace commbench::workload
