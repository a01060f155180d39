#include "measure/clock_sync.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include <fmt/format.h>

#include "bootstrap/deadline.h"
#include "common/host_identity.h"
#include "measure/host_timer.h"

namespace commbench {
namespace {

Bytes encode(int64_t v) {
  Bytes b(sizeof(v));
  std::memcpy(b.data(), &v, sizeof(v));
  return b;
}

int64_t decode(const Bytes& b) {
  int64_t v = 0;
  if (b.size() == sizeof(v)) std::memcpy(&v, b.data(), sizeof(v));
  return v;
}

int64_t unix_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Fixed layout for the allgather; the host name travels separately-sized but bounded.
struct Wire {
  int64_t offset_ns, rtt_ns, at_ns, unix_minus_timer_ns;
  int64_t timer_minus_monotonic_ns, read_width_ns, read_at_monotonic_ns, read_exact;
  char host[64];
};

// How fast two processes' timers on one host can drift apart, per ns. Against CLOCK_MONOTONIC a
// calibrated counter drifts as fast as NTP slews that clock, at most 500 ppm (the kernel's
// largest frequency correction); two counters calibrated against it drift apart by the two
// calibrations' errors, a few ppm each.
constexpr double kSlewPerNs = 500e-6;
constexpr double kCalibrationsPerNs = 20e-6;

}  // namespace

void to_json(nlohmann::json& j, const ClockEstimate& e) {
  j = {{"rank", e.rank},   {"host", e.host},   {"offset_ns", e.offset_ns},
       {"rtt_ns", e.rtt_ns}, {"at_ns", e.at_ns}, {"unix_minus_timer_ns", e.unix_minus_timer_ns}};
}

void from_json(const nlohmann::json& j, ClockEstimate& e) {
  e = ClockEstimate{};
  e.rank = j.value("rank", 0);
  e.host = j.value("host", "");
  e.offset_ns = j.value("offset_ns", int64_t{0});
  e.rtt_ns = j.value("rtt_ns", int64_t{0});
  e.at_ns = j.value("at_ns", int64_t{0});
  e.unix_minus_timer_ns = j.value("unix_minus_timer_ns", int64_t{0});
}

HostClockRead read_host_clock(const HostTimer& timer) {
  HostClockRead read;
  read.monotonic_ns = monotonic_ns();
  if (!timer.uses_counter()) {  // the timer is steady_clock: nothing to read, nothing to drift
    read.exact = true;
    return read;
  }
  read.width_ns = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 5; ++i) {
    const int64_t a = timer.now_ns(), m = monotonic_ns(), b = timer.now_ns();
    if (b >= a && b - a < read.width_ns) {  // a counter read on two cores can go backwards
      read.width_ns = b - a;
      read.timer_minus_monotonic_ns = a + (b - a) / 2 - m;
      read.monotonic_ns = m;
    }
  }
  if (read.width_ns == std::numeric_limits<int64_t>::max()) read.width_ns = 0;
  return read;
}

ClockEstimate estimate_from_leader(const ClockEstimate& leader, const HostClockRead& leader_read,
                                   ClockEstimate own, const HostClockRead& own_read) {
  // rank 0 - own = (rank 0 - leader) + (leader - host clock) - (own - host clock).
  const int64_t shift = leader_read.timer_minus_monotonic_ns - own_read.timer_minus_monotonic_ns;
  own.offset_ns = leader.offset_ns + shift;
  own.at_ns = leader.at_ns - shift;  // the leader's moment on this rank's timer
  double drift_ns = 0;
  if (!(leader_read.exact && own_read.exact)) {
    // The two reads were not simultaneous, and the leader's offset holds at its own moment.
    const int64_t leader_at_monotonic = leader.at_ns - leader_read.timer_minus_monotonic_ns;
    drift_ns = kSlewPerNs * static_cast<double>(std::llabs(leader_read.monotonic_ns - own_read.monotonic_ns)) +
               kCalibrationsPerNs * static_cast<double>(std::llabs(leader_at_monotonic - leader_read.monotonic_ns));
  }
  own.rtt_ns = leader.rtt_ns + leader_read.width_ns + own_read.width_ns + 2 * static_cast<int64_t>(std::ceil(drift_ns));
  return own;
}

int clock_rounds(int measuring_leaders) { return measuring_leaders <= 64 ? 8 : 3; }

std::vector<int> clock_group_leaders(const std::vector<std::string>& identities) {
  std::vector<int> leader(identities.size());
  std::map<std::string, int> lowest;
  for (size_t r = 0; r < identities.size(); ++r)
    leader[r] = lowest.try_emplace(identities[r], static_cast<int>(r)).first->second;
  return leader;
}

int measuring_leaders(const std::vector<int>& leader) {
  int n = 0;
  for (size_t r = 1; r < leader.size(); ++r) n += leader[r] == static_cast<int>(r);  // rank 0's group's leader is 0
  return n;
}

int64_t monotonic_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ClockOffsets estimate_clock_offsets(Bootstrap& bootstrap, const std::string& label, Millis timeout) {
  const HostTimer& timer = HostTimer::get();
  const auto deadline = Deadline::after(timeout);
  StoreClient& store = bootstrap.store();
  const int rank = bootstrap.rank(), world = bootstrap.world_size();
  const std::string base = fmt::format("{}/clock/{}/", bootstrap.prefix(), label);
  auto key = [&](int r, int k, const char* what) { return fmt::format("{}{}/{}/{}", base, r, k, what); };

  // Ranks of one kernel and time namespace share its CLOCK_MONOTONIC (common/host_identity.h),
  // so only the lowest of them (the group's leader) measures against rank 0; the others add
  // their timer's offset to that clock. Rank 0 answers one leader per host instead of every
  // rank, and the ranks on rank 0's host get their offset from two clock reads instead of half
  // a store round trip.
  std::array<char, 320> identity{};
  const std::string own_identity = host_name() + "\n" + monotonic_clock_identity();
  std::memcpy(identity.data(), own_identity.data(), std::min(own_identity.size(), identity.size() - 1));
  std::vector<std::array<char, 320>> identities(static_cast<size_t>(world));
  bootstrap.allgather(identity.data(), identity.size(), identities.data(), Millis(deadline.remaining_ms()));
  std::vector<std::string> names;
  names.reserve(identities.size());
  for (const auto& id : identities) names.emplace_back(id.data(), strnlen(id.data(), id.size()));
  const std::vector<int> leader = clock_group_leaders(names);
  // The same on every rank: every rank has the same table.
  const int rounds = clock_rounds(measuring_leaders(leader));
  // Read close together on every rank of a host: they all leave the allgather at once.
  const HostClockRead read = read_host_clock(timer);

  Wire mine{};
  if (rank == 0) {
    mine.at_ns = read.timer_minus_monotonic_ns + read.monotonic_ns;  // offset 0, at the read
    // Rank 0 answers each other group's leader in turn, reading its timer as late as it can.
    for (int r = 1; r < world; ++r) {
      if (leader[static_cast<size_t>(r)] != r) continue;
      for (int k = 0; k < rounds; ++k) {
        store.get(key(r, k, "ping"), Millis(deadline.remaining_ms()));
        store.set(key(r, k, "pong"), encode(timer.now_ns()));
      }
    }
  } else if (leader[static_cast<size_t>(rank)] == rank) {
    int64_t best_rtt = std::numeric_limits<int64_t>::max();
    for (int k = 0; k < rounds; ++k) {
      const int64_t t1 = timer.now_ns();
      store.set(key(rank, k, "ping"), encode(t1));
      const int64_t t2 = decode(store.get(key(rank, k, "pong"), Millis(deadline.remaining_ms())));
      const int64_t t4 = timer.now_ns();
      if (t4 - t1 < best_rtt) {
        best_rtt = t4 - t1;
        mine.rtt_ns = t4 - t1;
        mine.at_ns = t1 + (t4 - t1) / 2;
        mine.offset_ns = t2 - mine.at_ns;
      }
    }
    store.delete_prefix(fmt::format("{}{}/", base, rank));  // rank 0 has read every ping
  }
  mine.timer_minus_monotonic_ns = read.timer_minus_monotonic_ns;
  mine.read_width_ns = read.width_ns;
  mine.read_at_monotonic_ns = read.monotonic_ns;
  mine.read_exact = read.exact ? 1 : 0;
  // The wall clock next to the timer, the tighter of a few paired reads.
  int64_t best_gap = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 5; ++i) {
    const int64_t a = timer.now_ns(), u = unix_ns(), b = timer.now_ns();
    if (b >= a && b - a < best_gap) {
      best_gap = b - a;
      mine.unix_minus_timer_ns = u - (a + (b - a) / 2);
    }
  }
  const std::string name = host_name();
  std::memcpy(mine.host, name.data(), std::min(name.size(), sizeof(mine.host) - 1));

  std::vector<Wire> all(static_cast<size_t>(world));
  bootstrap.allgather(&mine, sizeof(mine), all.data(), Millis(deadline.remaining_ms()));
  auto estimate_of = [&](int r) {
    const Wire& w = all[static_cast<size_t>(r)];
    return ClockEstimate{r, std::string(w.host, strnlen(w.host, sizeof(w.host))), w.offset_ns, w.rtt_ns, w.at_ns,
                         w.unix_minus_timer_ns};
  };
  auto read_of = [&](int r) {
    const Wire& w = all[static_cast<size_t>(r)];
    return HostClockRead{w.timer_minus_monotonic_ns, w.read_width_ns, w.read_at_monotonic_ns, w.read_exact != 0};
  };
  ClockOffsets out{rounds, {}, leader};
  out.ranks.reserve(all.size());
  for (int r = 0; r < world; ++r) {
    const int l = leader[static_cast<size_t>(r)];
    out.ranks.push_back(l == r ? estimate_of(r) : estimate_from_leader(estimate_of(l), read_of(l), estimate_of(r), read_of(r)));
  }
  return out;
}

}  // namespace commbench
