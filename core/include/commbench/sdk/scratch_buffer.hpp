// A grow-only host buffer owned by a plugin, reused across ops of one communicator so that the
// timed loop never allocates. Header-only plugin SDK: plugins may use it, the ABI does not.
#pragma once

#include <cstddef>
#include <memory>

namespace commbench::sdk {

class ScratchBuffer {
 public:
  // At least `bytes` of uninitialised memory; invalidates earlier pointers when it grows.
  void* get(size_t bytes) {
    if (bytes > capacity_) {
      data_.reset();  // free first: peak memory stays one buffer
      data_ = std::make_unique_for_overwrite<std::byte[]>(bytes);
      capacity_ = bytes;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<std::byte[]> data_;
  size_t capacity_ = 0;
};

}  // namespace commbench::sdk
