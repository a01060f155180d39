#include "collectives.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include "checked_op.h"
#include "communicator.h"
#include "errors.h"
#include "reduction.h"

namespace commbench::gloo_backend {
namespace {

// gloo's buffer setters take non-const pointers even for data they only read.
uint8_t* bytes_of(const void* pointer) { return static_cast<uint8_t*>(const_cast<void*>(pointer)); }

bool overlaps(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto pa = reinterpret_cast<uintptr_t>(a);
  const auto pb = reinterpret_cast<uintptr_t>(b);
  return pa < pb + b_bytes && pb < pa + a_bytes;
}

// `input`, or a copy of it when it overlaps `output`.
uint8_t* separate_input(cb_comm& comm, const void* input, size_t input_bytes, const void* output,
                        size_t output_bytes) {
  if (!overlaps(input, input_bytes, output, output_bytes)) return bytes_of(input);
  void* copy = comm.staging.get(input_bytes);
  std::memcpy(copy, input, input_bytes);
  return static_cast<uint8_t*>(copy);
}

void allreduce(cb_comm& comm, const CheckedOp& op) {
  const AllreduceAlgorithm algorithm = comm.backend->options.allreduce_algorithm;
  if (is_in_place_only(algorithm)) {
    comm.legacy_allreduce.run(comm, op, algorithm);  // check_op guaranteed in-place
    return;
  }
  gloo::AllreduceOptions opts(comm.context);
  opts.setAlgorithm(algorithm == AllreduceAlgorithm::kBcube ? gloo::AllreduceOptions::Algorithm::BCUBE
                                                            : gloo::AllreduceOptions::Algorithm::RING);
  // The element type only sets gloo's element size (segment alignment); the reduction
  // function knows the real dtype.
  with_storage_type(op.element_size, [&](auto storage) {
    using T = decltype(storage);
    if (op.sendbuf != op.recvbuf) {
      uint8_t* input = separate_input(comm, op.sendbuf, op.bytes, op.recvbuf, op.bytes);
      opts.setInput(reinterpret_cast<T*>(input), op.count);
    }
    opts.setOutput(static_cast<T*>(op.recvbuf), op.count);  // alone: in place
  });
  opts.setReduceFunction(reduce_function(op.dtype, op.redop));
  opts.setTag(comm.take_tag());
  gloo::allreduce(opts);
}

void allgather(cb_comm& comm, const CheckedOp& op) {
  const size_t total = op.bytes * comm.size;
  uint8_t* output = static_cast<uint8_t*>(op.recvbuf);
  gloo::AllgatherOptions opts(comm.context);
  // In place (the rank's block already at recvbuf + rank*count): gloo takes the output alone.
  if (op.sendbuf != output + op.bytes * comm.rank)
    opts.setInput(separate_input(comm, op.sendbuf, op.bytes, output, total), op.bytes);
  opts.setOutput(output, total);
  opts.setTag(comm.take_tag());
  gloo::allgather(opts);
}

void broadcast(cb_comm& comm, const CheckedOp& op) {
  gloo::BroadcastOptions opts(comm.context);
  if (comm.rank == op.root && op.sendbuf != op.recvbuf)
    opts.setInput(separate_input(comm, op.sendbuf, op.bytes, op.recvbuf, op.bytes), op.bytes);
  opts.setOutput(static_cast<uint8_t*>(op.recvbuf), op.bytes);
  opts.setRoot(op.root);
  opts.setTag(comm.take_tag());
  gloo::broadcast(opts);
}

void reduce(cb_comm& comm, const CheckedOp& op) {
  gloo::ReduceOptions opts(comm.context);
  with_storage_type(op.element_size, [&](auto storage) {
    using T = decltype(storage);
    if (comm.rank == op.root) {
      if (op.sendbuf != op.recvbuf) {
        uint8_t* input = separate_input(comm, op.sendbuf, op.bytes, op.recvbuf, op.bytes);
        opts.setInput(reinterpret_cast<T*>(input), op.count);
      }
      opts.setOutput(static_cast<T*>(op.recvbuf), op.count);
    } else {
      // gloo accumulates partial results in the output of every rank; NCCL semantics leave a
      // non-root's buffers alone, so non-roots get a plugin-owned output.
      opts.setInput(reinterpret_cast<T*>(bytes_of(op.sendbuf)), op.count);
      opts.setOutput(static_cast<T*>(comm.reduce_output.get(op.bytes)), op.count);
    }
  });
  opts.setRoot(op.root);
  opts.setReduceFunction(reduce_function(op.dtype, op.redop));
  opts.setTag(comm.take_tag());
  gloo::reduce(opts);
}

void alltoall(cb_comm& comm, const CheckedOp& op) {
  const size_t total = op.bytes * comm.size;
  // gloo receives block j while it may still have to send block j, so an in-place alltoall
  // always needs a copy of the input.
  gloo::AlltoallOptions opts(comm.context);
  opts.setInput(separate_input(comm, op.sendbuf, total, op.recvbuf, total), total);
  opts.setOutput(static_cast<uint8_t*>(op.recvbuf), total);
  opts.setTag(comm.take_tag());
  gloo::alltoall(opts);
}

void gather(cb_comm& comm, const CheckedOp& op) {
  gloo::GatherOptions opts(comm.context);
  if (comm.rank == op.root) {
    const size_t total = op.bytes * comm.size;
    // gloo copies the root's own block with memcpy while receiving the others: any overlap
    // (including the usual in-place layout sendbuf == recvbuf + root*count) goes via a copy.
    opts.setInput(separate_input(comm, op.sendbuf, op.bytes, op.recvbuf, total), op.bytes);
    opts.setOutput(static_cast<uint8_t*>(op.recvbuf), total);
  } else {
    opts.setInput(bytes_of(op.sendbuf), op.bytes);
  }
  opts.setRoot(op.root);
  opts.setTag(comm.take_tag());
  gloo::gather(opts);
}

void scatter(cb_comm& comm, const CheckedOp& op) {
  gloo::ScatterOptions opts(comm.context);
  if (comm.rank == op.root) {
    // One input block per rank. A block that overlaps the output would be overwritten (or
    // memcpy'd onto itself) while gloo still sends it: only such blocks are copied.
    std::vector<uint8_t*> blocks(comm.size);
    size_t staged = 0;
    for (int i = 0; i < comm.size; ++i) {
      blocks[i] = bytes_of(op.sendbuf) + op.bytes * i;
      if (overlaps(blocks[i], op.bytes, op.recvbuf, op.bytes)) ++staged;
    }
    if (staged > 0) {
      auto* copies = static_cast<uint8_t*>(comm.staging.get(op.bytes * staged));
      for (uint8_t*& block : blocks) {
        if (!overlaps(block, op.bytes, op.recvbuf, op.bytes)) continue;
        std::memcpy(copies, block, op.bytes);
        block = copies;
        copies += op.bytes;
      }
    }
    opts.setInputs(blocks, op.bytes);
  }
  opts.setOutput(static_cast<uint8_t*>(op.recvbuf), op.bytes);
  opts.setRoot(op.root);
  opts.setTag(comm.take_tag());
  gloo::scatter(opts);
}

void barrier(cb_comm& comm) {
  gloo::BarrierOptions opts(comm.context);
  opts.setTag(comm.take_tag());
  gloo::barrier(opts);
}

}  // namespace

void run_collective(cb_comm& comm, const CheckedOp& op) {
  if (op.op == CB_OP_BARRIER) return barrier(comm);
  // Every rank has the same count, so every rank skips an empty op together.
  if (op.count == 0) return;
  switch (op.op) {
    case CB_OP_ALLREDUCE: return allreduce(comm, op);
    case CB_OP_ALLGATHER: return allgather(comm, op);
    case CB_OP_REDUCESCATTER: return comm.reduce_scatter.run(comm, op);
    case CB_OP_BROADCAST: return broadcast(comm, op);
    case CB_OP_REDUCE: return reduce(comm, op);
    case CB_OP_ALLTOALL: return alltoall(comm, op);
    case CB_OP_GATHER: return gather(comm, op);
    case CB_OP_SCATTER: return scatter(comm, op);
    default: break;
  }
  fail(CB_ERR_INTERNAL, "run_collective called for a non-collective op");
}

}  // namespace commbench::gloo_backend
