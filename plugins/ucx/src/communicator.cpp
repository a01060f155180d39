#include "communicator.h"

#include <algorithm>
#include <cstring>

#include "collectives/prime.h"
#include "errors.h"

namespace commbench::ucx_backend {
namespace {

Clock::time_point deadline_in(int32_t timeout_ms) {
  return timeout_ms < 0 ? Clock::time_point::max() : Clock::now() + std::chrono::milliseconds(timeout_ms);
}

int32_t ms_left(Clock::time_point deadline) {
  if (deadline == Clock::time_point::max()) return -1;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int32_t>(std::clamp<int64_t>(left.count(), 1, INT32_MAX));
}

void check_host(cb_status s, const char* what) {
  if (s != CB_OK)
    fail(s == CB_ERR_TIMEOUT ? CB_ERR_TIMEOUT : CB_ERR_REMOTE,
         std::string(what) + " through the host's bootstrap failed (status " + std::to_string(s) +
             "); another rank probably did not reach communicator creation");
}

// Every rank's worker address, in rank order: lengths first, then the addresses padded to the
// longest (the bootstrap allgather takes one size for all ranks).
std::vector<std::vector<unsigned char>> exchange_addresses(const cb_host_services& host,
                                                           const std::vector<unsigned char>& mine,
                                                           Clock::time_point deadline) {
  const size_t world = static_cast<size_t>(host.world_size);
  uint64_t length = mine.size();
  std::vector<uint64_t> lengths(world);
  check_host(host.bootstrap_allgather(host.ctx, &length, sizeof(length), lengths.data(), ms_left(deadline)),
             "exchanging UCX worker address lengths");
  const size_t longest = *std::max_element(lengths.begin(), lengths.end());
  std::vector<unsigned char> padded(longest, 0), all(longest * world);
  std::memcpy(padded.data(), mine.data(), mine.size());
  check_host(host.bootstrap_allgather(host.ctx, padded.data(), longest, all.data(), ms_left(deadline)),
             "exchanging UCX worker addresses");
  std::vector<std::vector<unsigned char>> addresses(world);
  for (size_t r = 0; r < world; ++r)
    addresses[r].assign(all.begin() + static_cast<ptrdiff_t>(r * longest),
                        all.begin() + static_cast<ptrdiff_t>(r * longest + lengths[r]));
  return addresses;
}

}  // namespace

namespace {

// One collective's worth of traffic on the channel: a new sequence number, and whatever a
// failure left posted dropped.
template <class Body>
void with_channel(cb_comm& comm, Deadline deadline, Body&& body, EagerSends eager = {}) {
  comm.channel->begin(deadline, eager);
  try {
    body(*comm.channel);
  } catch (...) {
    comm.channel->abandon();
    throw;
  }
}

}  // namespace

void run_on_channel(cb_comm& comm, cb_op op, const CollectiveArgs& args, Deadline deadline) {
  const UcxOptions& o = comm.backend.options;
  with_channel(
      comm, deadline, [&](Channel& ch) { run_collective(ch, op, args, o.algorithms, comm.scratch); },
      eager_sends_for(op, args, o.allreduce_eager_up_to));
}

std::unique_ptr<cb_comm> create_communicator(cb_backend& backend, int32_t timeout_ms) {
  const Clock::time_point deadline = deadline_in(timeout_ms);
  const UcxOptions& o = backend.options;
  auto comm = std::make_unique<cb_comm>(backend);
  if (timeout_ms >= 0) comm->op_limit = std::min(comm->op_limit, std::chrono::milliseconds(timeout_ms));
  comm->rank = backend.host.rank;
  comm->size = backend.host.world_size;
  comm->worker = std::make_unique<Worker>(backend.context, o.thread_mode, backend.progress);
  comm->endpoints = std::make_unique<Endpoints>(
      *comm->worker, exchange_addresses(backend.host, comm->worker->address(), deadline),
      o.error_handling);
  comm->memory = std::make_unique<MemoryRegistry>(backend.context, o.registration, backend.supports_cuda());
  comm->tags = std::make_unique<TagEngine>(*comm->worker, *comm->endpoints, *comm->memory, comm->rank);
  comm->channel = std::make_unique<UcpChannel>(*comm->tags, comm->rank, comm->size);
  if (o.connects_eagerly(comm->size)) {
    comm->endpoints->connect_all(comm->rank);
    // The first eager messages to a peer otherwise page-fault into its receive buffers, in the
    // sender's and in the receiver's process, inside the first small-message cases' timed loops.
    with_channel(*comm, deadline, [&](Channel& ch) { prime_peers(ch, o.prime_messages, kPrimeMessageBytes); });
  }
  // A barrier over UCX proves every rank can reach its neighbours before anything is timed,
  // so a transport that cannot connect fails here, named, instead of in the first case.
  run_on_channel(*comm, CB_OP_BARRIER, CollectiveArgs{}, deadline);
  return comm;
}

void destroy_communicator(std::unique_ptr<cb_comm> comm) {
  const Clock::time_point deadline =
      Clock::now() + std::min<std::chrono::milliseconds>(comm->backend.options.timeout, std::chrono::seconds(30));
  bool orderly = true;
  try {
    run_on_channel(*comm, CB_OP_BARRIER, CollectiveArgs{}, deadline);
  } catch (...) {
    orderly = false;  // a peer is gone: do not wait for it to confirm closes
  }
  comm->channel.reset();
  const bool force = !orderly && comm->backend.options.error_handling == ErrorHandling::kPeer;
  comm->endpoints->close_all(force, std::min(deadline, Clock::now() + std::chrono::seconds(5)));
  if (!orderly)
    fail(CB_ERR_REMOTE, "comm_destroy: the closing barrier over UCX failed; a peer had already "
                        "gone (its log says why)");
}

void abort_communicator(std::unique_ptr<cb_comm> comm) {
  comm->channel.reset();
  comm->endpoints->close_all(comm->backend.options.error_handling == ErrorHandling::kPeer,
                             Clock::now() + std::chrono::milliseconds(500));
}

}  // namespace commbench::ucx_backend
