// gloo's ReduceScatterHalvingDoubling (gloo/reduce_scatter.h, unchanged upstream since 2018),
// with the waits its run() lacks. Without them it returns wrong results (issue 28 item 4):
//
// 1. run() never waits for its own sends. Its last step moves the rank's reduced block to the
//    start of the buffer it has sent from, and it returns with sends still queued (the caller
//    then writes the next input there). A send is queued whenever it does not fit the socket at
//    once; gloo sizes SO_SNDBUF per message, so the first op of a size that doubles the last one
//    leaves ~100 bytes queued, and the peer received the overwritten tail: 26 wrong elements at
//    2 ranks, 32 then 64 KiB.
// 2. In a non-power-of-two world a rank of the smaller binary block sends its data into a
//    larger-block rank's receive buffer with no acknowledgement (gloo's comment there says the
//    messages are "serialized", which holds for AllreduceHalvingDoubling, where the reply
//    depends on that data, not here). The smaller-block rank can finish, start the next op and
//    overwrite that buffer before the larger-block rank has reduced it: at 3 ranks the next op's
//    data was summed into element 0 of ranks 0 and 1.
//
// run() below is gloo's, step for step, with the additions marked "commbench:": the data sends
// are waited for before the buffer they read is written and before returning, and a
// larger-block rank acknowledges the smaller block's data as soon as it has reduced it (4 bytes)
// while the smaller-block rank waits for that before returning. Waiting for a send never waits
// for a peer's algorithm: gloo's I/O thread reads every socket into the registered buffers.
// The original is Copyright (c) 2018-present, Facebook, Inc., BSD licence.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include <gloo/reduce_scatter.h>
#include <gloo/transport/buffer.h>

namespace commbench::gloo_backend {

template <class T>
class ReduceScatterHalvingDoubling final : public gloo::ReduceScatterHalvingDoubling<T> {
  using Base = gloo::ReduceScatterHalvingDoubling<T>;

 public:
  // Collective, like gloo's: every rank constructs the same objects in the same order (slots).
  ReduceScatterHalvingDoubling(const std::shared_ptr<gloo::Context>& context, T* buffer, int count,
                               const std::vector<int>& block_counts, const gloo::ReductionFunction<T>* fn)
      : Base(context, {buffer}, count, block_counts, fn) {
    const int n = this->contextSize_;
    if (n > 1 && (n & (n - 1)) != 0) connect_acknowledgements();
    sent_.reserve(this->sendDataBufs_.size() + this->largerBlockSendDataBufs_.size() +
                  this->distSendDataBufs_.size() + this->sendNotificationBufs_.size() + 1);
  }

  void run() override {
    size_t bufferOffset = 0;
    size_t numItems = this->stepsWithinBlock_ > 0 ? this->chunkSize_ << (this->steps_ - 1) : this->count_;
    auto& ptrs = this->ptrs_;
    for (size_t i = 1; i < ptrs.size(); i++) this->fn_->call(ptrs[0], ptrs[i], this->count_);
    if (this->contextSize_ == 1) {
      for (size_t i = 1; i < ptrs.size(); i++) memcpy(ptrs[i], ptrs[0], this->bytes_);
      return;
    }

    // Reduce-scatter (within binary block).
    for (uint32_t i = 0; i < this->stepsWithinBlock_; i++) {
      if (this->sendOffsets_[i] < static_cast<size_t>(this->count_))
        send(*this->sendDataBufs_[i], this->sendOffsets_[i] * sizeof(T), this->sendCounts_[i] * sizeof(T));
      if (this->recvOffsets_[i] < static_cast<size_t>(this->count_)) {
        this->recvDataBufs_[i]->waitRecv();
        this->fn_->call(&ptrs[0][this->recvOffsets_[i]], &this->recvBuf_[bufferOffset], this->recvCounts_[i]);
      }
      bufferOffset += numItems;
      send(*this->sendNotificationBufs_[i]);
      numItems >>= 1;
    }

    // Communication across binary blocks for non-power-of-two number of processes.
    int sendNotifyOffset = this->stepsWithinBlock_;
    if (this->nextSmallerBlockSize_ != 0 && this->smallerBlockRecvDataBuf_ != nullptr) {
      this->smallerBlockRecvDataBuf_->waitRecv();
      this->fn_->call(&ptrs[0][this->recvOffsets_[this->stepsWithinBlock_ - 1]], &this->recvBuf_[bufferOffset],
                      this->recvCounts_[this->stepsWithinBlock_ - 1]);
      send(*ack_to_smaller_);  // commbench: its buffer is free for the smaller block's next op
    }
    const auto totalItemsToSend =
        this->stepsWithinBlock_ > 0 ? this->recvCounts_[this->stepsWithinBlock_ - 1] : this->count_;
    std::vector<bool>& sent_to_larger = sent_to_larger_;
    sent_to_larger.assign(this->largerBlockSendDataBufs_.size(), false);
    if (this->nextLargerBlockSize_ != 0 && totalItemsToSend != 0) {
      const auto offset = this->stepsWithinBlock_ > 0 ? this->recvOffsets_[this->stepsWithinBlock_ - 1] : 0;
      const auto numSendsAndReceivesToLargerBlock = this->nextLargerBlockSize_ / this->myBinaryBlockSize_;
      for (uint32_t i = 0; i < numSendsAndReceivesToLargerBlock; i++) {
        if (this->sendCountToLargerBlock_ * i < totalItemsToSend) {
          send(*this->largerBlockSendDataBufs_[i], (offset + i * this->sendCountToLargerBlock_) * sizeof(T),
               std::min(this->sendCountToLargerBlock_, totalItemsToSend - this->sendCountToLargerBlock_ * i) *
                   sizeof(T));
          sent_to_larger[i] = true;
        }
      }
    }

    // Distribution phase: scatter/distribute based on the user-specified distribution.
    int index = 0;
    for (const auto& distMap : this->distMapForSend_) {
      if (this->contextRank_ != distMap.rank)
        send(*this->distSendDataBufs_[index++], distMap.offset * sizeof(T), distMap.itemCount * sizeof(T));
    }
    // commbench: the copies below write where the sends above read.
    complete_sends();
    index = 0;
    bufferOffset = 0;
    for (const auto& distMap : this->distMapForRecv_) {
      if (this->contextRank_ != distMap.rank) {
        this->distRecvDataBufs_[index++]->waitRecv();
        memcpy(&ptrs[0][bufferOffset], &this->recvBufDist_[distMap.offset], distMap.itemCount * sizeof(T));
        send(*this->sendNotificationBufs_[sendNotifyOffset++]);
      } else if (this->contextRank_ != 0) {  // data already in place for rank 0
        memcpy(&ptrs[0][bufferOffset], &ptrs[0][distMap.offset], distMap.itemCount * sizeof(T));
      }
      bufferOffset += distMap.itemCount;
    }

    for (size_t i = 1; i < ptrs.size(); i++) memcpy(ptrs[i], ptrs[0], this->bytes_);

    // Wait for all notifications to make sure we can send data immediately without risking
    // overwriting data in its receive buffer before it consumed that data.
    for (auto& recvNotificationBuf : this->recvNotificationBufs_) recvNotificationBuf->waitRecv();
    // commbench: nothing of this op is left in flight when it returns.
    complete_sends();
    for (size_t i = 0; i < acks_from_larger_.size(); ++i)
      if (sent_to_larger[i]) acks_from_larger_[i]->waitRecv();
  }

 private:
  void send(gloo::transport::Buffer& buffer, size_t offset, size_t length) {
    buffer.send(offset, length);
    sent_.push_back(&buffer);
  }
  void send(gloo::transport::Buffer& buffer) {
    buffer.send();
    sent_.push_back(&buffer);
  }
  void complete_sends() {
    for (gloo::transport::Buffer* buffer : sent_) buffer->waitSend();
    sent_.clear();
  }

  // The pairs of gloo's cross-block step, found as its constructor finds them.
  void connect_acknowledgements() {
    const int n = this->contextSize_;
    const int rank = this->contextRank_;
    const int first_slot = this->context_->nextSlot(n * n);  // same count on every rank: slots match
    auto slot = [&](int smaller, int larger) { return first_slot + smaller * n + larger; };
    if (this->nextSmallerBlockSize_ != 0 && this->smallerBlockRecvDataBuf_ != nullptr) {
      const int smaller = this->offsetToMyBinaryBlock_ + this->myBinaryBlockSize_ +
                          this->rankInBinaryBlock_ % this->nextSmallerBlockSize_;
      ack_to_smaller_ = this->context_->getPair(smaller)->createSendBuffer(slot(smaller, rank), &ack_, sizeof(ack_));
    }
    if (this->nextLargerBlockSize_ != 0) {
      const uint32_t sends = this->nextLargerBlockSize_ / this->myBinaryBlockSize_;
      const uint32_t larger_bits = log2_of(this->nextLargerBlockSize_);
      uint32_t ordinal = reverse_last_bits(this->rankInBinaryBlock_, log2_of(this->myBinaryBlockSize_)) * sends;
      for (uint32_t i = 0; i < sends; ++i, ++ordinal) {
        const int larger = static_cast<int>(this->offsetToMyBinaryBlock_ - this->nextLargerBlockSize_ +
                                            reverse_last_bits(ordinal, larger_bits));
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

  std::vector<gloo::transport::Buffer*> sent_;  // sent this op and not yet waited for
  std::vector<bool> sent_to_larger_;             // per larger-block rank: sent to this op
  int ack_ = 0;                                  // the acknowledgements' payload, never read
  std::unique_ptr<gloo::transport::Buffer> ack_to_smaller_;
  std::vector<std::unique_ptr<gloo::transport::Buffer>> acks_from_larger_;
};

}  // namespace commbench::gloo_backend
