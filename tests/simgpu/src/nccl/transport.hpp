// Joining a communicator's shared segment and waiting on the other ranks through it.
#pragma once

#include <nccl.h>

#include <chrono>
#include <string>

#include "comm.hpp"

namespace simgpu {

// Maps the segment named by `id`, announces this rank and waits for all others (bounded by the
// watchdog). Checks nranks agreement and "Duplicate GPU detected".
ncclResult_t shm_join(Comm& c, const ncclUniqueId& id);
void shm_leave(Comm& c);
std::string shm_name_of(const ncclUniqueId& id);
bool unique_id_valid(const ncclUniqueId& id);

// Records a failure every rank will see (first one wins) and in ncclGetLastError.
void shared_fail(Comm& c, ncclResult_t e, const std::string& msg);

// Polls for progress: idle() sleeps with back-off and returns an error when this communicator is
// aborted, another rank failed or exited, or the watchdog expires.
class Waiter {
 public:
  Waiter(Comm& c, std::string what);
  ncclResult_t idle();
  void progressed();

 private:
  Comm& c_;
  std::string what_;
  std::chrono::steady_clock::time_point start_, next_peer_check_;
  int spins_ = 0;
};

ncclResult_t barrier(Comm& c, const char* what);

}  // namespace simgpu
