#include "p2p.h"

#include <gloo/types.h>

#include "checked_op.h"
#include "communicator.h"

namespace commbench::gloo_backend {
namespace {

// Slot prefix for send/recv, above the prefixes gloo's collectives use (0x01..0x08), so a
// user's tag can never match a collective's message.
constexpr uint8_t kP2pSlotPrefix = 0x40;

}  // namespace

std::unique_ptr<cb_request> post_send_or_recv(cb_comm& comm, const CheckedOp& op) {
  auto request = std::make_unique<cb_request>();
  if (op.count == 0) return request;  // both sides see count 0: nothing to match
  const bool is_send = op.op == CB_OP_SEND;
  // gloo only reads a send buffer, but its buffer type is not const.
  void* data = is_send ? const_cast<void*>(op.sendbuf) : op.recvbuf;
  auto buffer = comm.context->createUnboundBuffer(data, op.bytes);
  const uint64_t slot = gloo::Slot::build(kP2pSlotPrefix, op.tag);
  if (is_send)
    buffer->send(op.peer, slot);
  else
    buffer->recv(op.peer, slot);
  request->transfer = std::make_shared<Transfer>(
      is_send ? Transfer::Direction::kSend : Transfer::Direction::kRecv, std::move(buffer),
      comm.backend->options.timeout);
  request->progress = &comm.p2p_progress;
  return request;
}

bool test_request(cb_request& request) {
  return request.transfer == nullptr || request.transfer->poll(*request.progress);
}

void wait_request(cb_request& request, int32_t timeout_ms) {
  if (request.transfer != nullptr) request.transfer->wait(std::chrono::milliseconds(timeout_ms));
}

}  // namespace commbench::gloo_backend
