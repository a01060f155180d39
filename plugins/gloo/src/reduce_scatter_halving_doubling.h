// gloo's ReduceScatterHalvingDoubling (gloo/reduce_scatter.h, unchanged since 2018 upstream),
// with the two waits its run() lacks. Without them it returns wrong results (issue 28 item 4):
//
// 1. run() never waits for its own sends. Its last step moves the rank's reduced block to the
//    start of the buffer it has sent from, and a rank of a non-power-of-two world returns while
//    its sends to the larger block may still be queued (the caller then writes the next input
//    there). A send is queued whenever it does not fit the socket at once; gloo sizes SO_SNDBUF
//    per message, so the first op of a size that doubles the last one leaves ~100 bytes queued,
//    and the peer received the overwritten tail: 26 wrong elements at 2 ranks, 32 then 64 KiB.
//    Here every send returns once the transport has taken all its bytes. That never waits for a
//    peer's algorithm: gloo's I/O thread reads every socket into the registered buffers.
// 2. In a non-power-of-two world a rank of the smaller binary block sends its data into a
//    larger-block rank's receive buffer with no acknowledgement (the comment there says the
//    messages are "serialized", which holds for AllreduceHalvingDoubling, where the reply
//    depends on that data, not here). The smaller-block rank can finish, start the next run and
//    overwrite that buffer before the larger-block rank has reduced it: at 3 ranks the next
//    op's data was summed into element 0 of ranks 0 and 1. Here each larger-block rank sends a
//    4-byte acknowledgement once its run() is over, and the smaller-block rank waits for them
//    before returning.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include <gloo/reduce_scatter.h>
#include <gloo/transport/buffer.h>

namespace commbench::gloo_backend {

// A send buffer whose send() returns only once the transport has taken all the data.
class CompletingSend final : public gloo::transport::Buffer {
 public:
  // `ptr` and `size`: what `inner` was created with (Buffer::send() with no argument sends it all).
  CompletingSend(std::unique_ptr<gloo::transport::Buffer> inner, void* ptr, size_t size)
      : gloo::transport::Buffer(-1, ptr, size), inner_(std::move(inner)) {}
  void send(size_t offset, size_t length, size_t roffset) override {
    inner_->send(offset, length, roffset);
    inner_->waitSend();
    ++sends_;
  }
  void waitRecv() override { inner_->waitRecv(); }
  void waitSend() override {}  // every send completed before send() returned
  void setDebug(bool debug) override { inner_->setDebug(debug); }
  uint64_t sends() const { return sends_; }

 private:
  std::unique_ptr<gloo::transport::Buffer> inner_;
  uint64_t sends_ = 0;
};

template <class T>
class ReduceScatterHalvingDoubling final : public gloo::ReduceScatterHalvingDoubling<T> {
  using Base = gloo::ReduceScatterHalvingDoubling<T>;

 public:
  // Collective, like gloo's: every rank constructs the same objects in the same order (slots).
  ReduceScatterHalvingDoubling(const std::shared_ptr<gloo::Context>& context, T* buffer, int count,
                               const std::vector<int>& block_counts, const gloo::ReductionFunction<T>* fn)
      : Base(context, {buffer}, count, block_counts, fn) {
    if (this->contextSize_ == 1) return;
    // Every data send reads the rank's buffer; notifications read dummy_.
    for (auto* sends : {&this->sendDataBufs_, &this->largerBlockSendDataBufs_, &this->distSendDataBufs_})
      for (auto& send : *sends) send = std::make_unique<CompletingSend>(std::move(send), buffer, this->bytes_);
    for (auto& send : this->sendNotificationBufs_)
      send = std::make_unique<CompletingSend>(std::move(send), &this->dummy_, sizeof(this->dummy_));
    const int n = this->contextSize_;
    if ((n & (n - 1)) != 0) connect_acknowledgements();
  }

  void run() override {
    std::vector<uint64_t> sent_before(to_larger_.size());
    for (size_t i = 0; i < to_larger_.size(); ++i) sent_before[i] = to_larger_[i]->sends();
    Base::run();
    if (ack_to_smaller_) ack_to_smaller_->send();  // run() has reduced the smaller block's data
    for (size_t i = 0; i < to_larger_.size(); ++i)
      if (to_larger_[i]->sends() != sent_before[i]) acks_from_larger_[i]->waitRecv();
  }

 private:
  // The pairs of gloo's cross-block step, found as its constructor finds them.
  void connect_acknowledgements() {
    const int n = this->contextSize_;
    const int rank = this->contextRank_;
    const int first_slot = this->context_->nextSlot(n * n);  // same count on every rank: slots match
    auto slot = [&](int smaller, int larger) { return first_slot + smaller * n + larger; };
    if (this->nextSmallerBlockSize_ != 0 && this->smallerBlockRecvDataBuf_ != nullptr) {
      const int smaller = this->offsetToMyBinaryBlock_ + this->myBinaryBlockSize_ +
                          this->rankInBinaryBlock_ % this->nextSmallerBlockSize_;
      ack_to_smaller_ = std::make_unique<CompletingSend>(
          this->context_->getPair(smaller)->createSendBuffer(slot(smaller, rank), &ack_, sizeof(ack_)), &ack_,
          sizeof(ack_));
    }
    if (this->nextLargerBlockSize_ != 0) {
      const uint32_t sends = this->nextLargerBlockSize_ / this->myBinaryBlockSize_;
      const uint32_t larger_bits = log2_of(this->nextLargerBlockSize_);
      uint32_t ordinal = reverse_last_bits(this->rankInBinaryBlock_, log2_of(this->myBinaryBlockSize_)) * sends;
      for (uint32_t i = 0; i < sends; ++i, ++ordinal) {
        const int larger = static_cast<int>(this->offsetToMyBinaryBlock_ - this->nextLargerBlockSize_ +
                                            reverse_last_bits(ordinal, larger_bits));
        to_larger_.push_back(static_cast<CompletingSend*>(this->largerBlockSendDataBufs_[i].get()));
        acks_from_larger_.push_back(
            this->context_->getPair(larger)->createRecvBuffer(slot(rank, larger), &ack_, sizeof(ack_)));
      }
    }
  }
  static uint32_t log2_of(uint32_t power_of_two) { return static_cast<uint32_t>(std::log2(power_of_two)); }
  // gloo's reverseLastNBits (private there): the last `bits` bits of `value`, reversed.
  static uint32_t reverse_last_bits(uint32_t value, uint32_t bits) {
    uint32_t reversed = 0;
    for (uint32_t mask = 1; mask < (uint32_t{1} << bits); mask <<= 1) reversed = (reversed << 1) | ((value & mask) ? 1 : 0);
    return reversed;
  }

  int ack_ = 0;  // the acknowledgements' payload, never read
  std::unique_ptr<gloo::transport::Buffer> ack_to_smaller_;
  std::vector<CompletingSend*> to_larger_;  // owned by largerBlockSendDataBufs_
  std::vector<std::unique_ptr<gloo::transport::Buffer>> acks_from_larger_;
};

}  // namespace commbench::gloo_backend
