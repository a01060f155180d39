// Each rank's clock against rank 0's, estimated NTP-style through the bootstrap store by the
// lowest rank of each host (ranks of a host share its CLOCK_MONOTONIC: the others add their own
// timer's offset to it, read directly): the leader reads its timer (t1), posts a ping, rank 0
// answers with its own timer (t2), the leader reads its timer again when the answer arrives (t4). Rank 0's clock read happened between t1 and t4, so
//   offset = t2 - (t1 + t4) / 2   is within   +-(t4 - t1) / 2   of the truth,
// whatever the store's latency or asymmetry. Of `rounds` round trips the shortest is kept (its
// bound is the tightest). Done at the start and at the end of every execution; the two give the
// drift between the clocks (clock_alignment.h turns them into rank 0's timeline).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bootstrap/collectives.h"

namespace commbench {

class HostTimer;

struct ClockEstimate {
  int rank = 0;
  std::string host;
  int64_t offset_ns = 0;  // rank 0's timer minus this rank's, at at_ns
  int64_t rtt_ns = 0;     // the offset is good to +-rtt_ns/2 (a leader: its kept round trip)
  int64_t at_ns = 0;      // this rank's timer when the offset held (a leader: the round trip's midpoint)
  // CLOCK_REALTIME minus the timer on this rank, read together: maps a host's wall-clock
  // timestamps (telemetry.csv) onto its timer, and from there onto rank 0's.
  int64_t unix_minus_timer_ns = 0;
};

void to_json(nlohmann::json& j, const ClockEstimate& e);
void from_json(const nlohmann::json& j, ClockEstimate& e);

// The host's CLOCK_MONOTONIC (steady_clock on Linux), which every rank of a clock group reads
// alike whatever its timer: a calibrated counter is anchored per process.
int64_t monotonic_ns();

// One rank's timer against its host's CLOCK_MONOTONIC, read together.
struct HostClockRead {
  int64_t timer_minus_monotonic_ns = 0;
  int64_t width_ns = 0;      // of the tightest read: the difference is good to +-width_ns/2
  int64_t monotonic_ns = 0;  // when it was read, on the host clock
  bool exact = false;        // the timer is CLOCK_MONOTONIC itself: the difference is 0 forever
};

// Reads `timer` against CLOCK_MONOTONIC: the tightest of a few reads of the clock between two
// of the timer.
HostClockRead read_host_clock(const HostTimer& timer);

// The estimate of a rank that shares its host leader's CLOCK_MONOTONIC: the leader's offset plus
// the leader's timer minus this rank's, with the bound widened by both reads and by how far
// the two timers can drift apart between the reads and the leader's round trip (calibrated
// counters drift against the slewed host clock). `own` carries the rank, host and wall clock.
ClockEstimate estimate_from_leader(const ClockEstimate& leader, const HostClockRead& leader_read,
                                   ClockEstimate own, const HostClockRead& own_read);

// Round trips per host leader, by the number of leaders that measure against rank 0: fewer when
// there are many, since rank 0 answers them in turn. The ranks behind a leader cost nothing, so
// a job of 1,024 ranks on 8 hosts gets as many rounds as one of 8 ranks on 8 hosts.
int clock_rounds(int measuring_leaders);
// Each rank's clock group leader (the lowest rank with the same identity: host name, boot id,
// time namespace), in rank order.
std::vector<int> clock_group_leaders(const std::vector<std::string>& identities);
// The leaders that measure against rank 0: every group's leader but rank 0's group's.
int measuring_leaders(const std::vector<int>& leader);

struct ClockOffsets {
  int rounds = 0;                    // per leader, as clock_rounds chose them
  std::vector<ClockEstimate> ranks;  // rank order; rank 0's is offset 0, rtt 0
  std::vector<int> clock_group;      // each rank's clock group leader: equal ones read one CLOCK_MONOTONIC
};

// Collective over the execution's ranks; `label` ("start", "end") keeps the two estimates' keys
// apart. Every rank returns every rank's estimate.
ClockOffsets estimate_clock_offsets(Bootstrap& bootstrap, const std::string& label, Millis timeout);

}  // namespace commbench
