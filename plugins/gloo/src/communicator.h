// One communicator: a gloo context connected to every other rank, plus the per-communicator
// state the ops reuse (tags, scratch buffers, cached old-style algorithms).
#pragma once

#include <cstdint>
#include <memory>

#include <gloo/context.h>

#include "backend.h"
#include "legacy_algorithms.h"
#include "commbench/sdk/scratch_buffer.hpp"
#include "transfer.h"

struct cb_comm {
  cb_backend* backend = nullptr;
  std::shared_ptr<gloo::Context> context;
  int rank = 0;
  int size = 1;

  commbench::sdk::ScratchBuffer staging;        // inputs that overlap their outputs
  commbench::sdk::ScratchBuffer reduce_output;  // reduce's output on non-root ranks
  commbench::gloo_backend::LegacyAllreduceCache legacy_allreduce;
  commbench::gloo_backend::ReduceScatterCache reduce_scatter;
  commbench::gloo_backend::ProgressThread p2p_progress;  // declared after context: stops first

  // Every new-style gloo collective takes a tag that keeps its messages apart from those of
  // the ops before and after it. All ranks post the same sequence, so counters agree.
  uint32_t take_tag() { return next_tag_++; }

 private:
  uint32_t next_tag_ = 0;
};

namespace commbench::gloo_backend {

// Collective: exchanges the TCP pair addresses in one bootstrap allgather and connects the full
// mesh (full_mesh.h). `timeout_ms` bounds the rendezvous (negative: no limit); ops later use the
// timeout_ms option.
std::unique_ptr<cb_comm> create_communicator(cb_backend& backend, int32_t timeout_ms);

// Best effort, local: closes every connection so peers blocked on this rank fail fast
// (comm_abort then frees the communicator).
void abort_communicator(cb_comm& comm);

}  // namespace commbench::gloo_backend
