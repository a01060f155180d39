// Host services whose bootstrap_allgather is all the plugin's connect needs: `world` ranks as
// threads of this process meeting at a barrier, or one real rank whose peers' contributions the
// test writes (`scripted`).
#pragma once

#include <barrier>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "commbench/backend.h"

namespace commbench::gloo_backend::test {

class FakeBootstrap {
 public:
  // What the other ranks contribute to allgather call `call` (0, 1, ...) of `bytes` each; the
  // rank's own slot is filled from its send buffer. Return false to report a timeout.
  using Script = std::function<bool(int call, int rank, size_t bytes, char* slot)>;

  explicit FakeBootstrap(int world) : world_(world), barrier_(world), slots_(static_cast<size_t>(world)) {
    for (int r = 0; r < world; ++r) ranks_.push_back(std::make_unique<Rank>(Rank{this, r, {}, 0}));
  }
  FakeBootstrap(int world, Script script) : FakeBootstrap(1) {
    world_ = world;
    script_ = std::move(script);
  }

  // The services of rank `rank` (scripted: of the one real rank).
  cb_host_services services(int rank) {
    Rank& r = *ranks_.at(script_ ? 0 : static_cast<size_t>(rank));
    r.rank = rank;
    cb_host_services& s = r.services;
    s.struct_size = sizeof(s);
    s.ctx = &r;
    s.rank = rank;
    s.world_size = world_;
    s.local_rank = rank;
    s.local_world_size = world_;
    s.bootstrap_allgather = &FakeBootstrap::allgather;
    return s;
  }

 private:
  struct Rank {
    FakeBootstrap* host;
    int rank;
    cb_host_services services;
    int calls;
  };

  static cb_status allgather(void* ctx, const void* send, size_t bytes, void* recv, int32_t) {
    Rank& self = *static_cast<Rank*>(ctx);
    FakeBootstrap& host = *self.host;
    char* out = static_cast<char*>(recv);
    if (host.script_) {
      for (int r = 0; r < host.world_; ++r) {
        char* slot = out + static_cast<size_t>(r) * bytes;
        if (r == self.rank) std::memcpy(slot, send, bytes);
        else if (!host.script_(self.calls, r, bytes, slot)) return CB_ERR_TIMEOUT;
      }
      ++self.calls;
      return CB_OK;
    }
    const auto* in = static_cast<const char*>(send);
    host.slots_[static_cast<size_t>(self.rank)].assign(in, in + bytes);
    host.barrier_.arrive_and_wait();
    for (int r = 0; r < host.world_; ++r) {
      const auto& slot = host.slots_[static_cast<size_t>(r)];
      if (slot.size() != bytes) return CB_ERR_INTERNAL;  // a size mismatch, as the real bootstrap refuses
      std::memcpy(out + static_cast<size_t>(r) * bytes, slot.data(), bytes);
    }
    host.barrier_.arrive_and_wait();  // nobody overwrites a slot another rank still reads
    return CB_OK;
  }

  int world_;
  std::barrier<> barrier_;
  std::vector<std::vector<char>> slots_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  Script script_;
};

}  // namespace commbench::gloo_backend::test
