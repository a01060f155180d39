// One communicator over all ranks of the run: a UCP worker, endpoints to the peers (from
// worker addresses exchanged through the host's bootstrap allgather), the memory registry and
// the collective channel.
#pragma once

#include <chrono>
#include <memory>

#include "backend.h"
#include "commbench/sdk/op_args.hpp"
#include "collectives/collectives.h"
#include "endpoints.h"
#include "memory.h"
#include "transfers.h"
#include "ucp_channel.h"
#include "worker.h"

struct cb_comm {
  cb_backend& backend;
  int rank = 0;
  int size = 1;
  // Declaration order is teardown order reversed: the channel goes first, the worker last.
  std::unique_ptr<commbench::ucx_backend::Worker> worker;
  std::unique_ptr<commbench::ucx_backend::Endpoints> endpoints;
  std::unique_ptr<commbench::ucx_backend::MemoryRegistry> memory;
  std::unique_ptr<commbench::ucx_backend::TagEngine> tags;
  std::unique_ptr<commbench::ucx_backend::UcpChannel> channel;
  commbench::ucx_backend::Scratch scratch;
  commbench::sdk::CheckedArgsCache<> checked_args;  // post.cpp's validate: the same few ops, checked once

  // The option `timeout_ms`, never longer than comm_create's timeout (docs/plugin-abi.md §4,
  // "Deadlines"): a collective run inside post whose peer never arrives ends within the time the
  // core has left, not the 300 s default.
  std::chrono::milliseconds op_limit{0};

  explicit cb_comm(cb_backend& b) : backend(b), op_limit(b.options.timeout) {}
  // Counted from the collective's first look at the clock, not read here: on a VM a clock read
  // costs as much as a small shared-memory message (worker.h, Deadline).
  commbench::ucx_backend::Deadline op_deadline() const { return commbench::ucx_backend::Deadline::after(op_limit); }
};

namespace commbench::ucx_backend {

std::unique_ptr<cb_comm> create_communicator(cb_backend& backend, int32_t timeout_ms);
// Orderly: a barrier so no peer still needs us, then endpoints closed with a flush.
void destroy_communicator(std::unique_ptr<cb_comm> comm);
// Immediate: endpoints force-closed (flushing when error handling is off), nothing waited for.
void abort_communicator(std::unique_ptr<cb_comm> comm);

// Runs one collective through the channel (used by post and for the internal barriers).
void run_on_channel(cb_comm& comm, cb_op op, const CollectiveArgs& args, Deadline deadline);

}  // namespace commbench::ucx_backend
