#include "measure/clock_sync.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include <fmt/format.h>

#include "bootstrap/deadline.h"
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
  int64_t timer_minus_monotonic_ns, paired_read_ns;  // this process's timer against its host's clock
  char host[64];
};

// The timer minus CLOCK_MONOTONIC, from the tightest of a few reads of one between two of the
// other; `gap` is that pair's width, twice the estimate's error bound.
void timer_against_monotonic(const HostTimer& timer, int64_t& difference, int64_t& gap) {
  gap = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 5; ++i) {
    const int64_t a = timer.now_ns();
    const int64_t m = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch()).count();
    const int64_t b = timer.now_ns();
    if (b - a < gap) {
      gap = b - a;
      difference = a + (b - a) / 2 - m;
    }
  }
}

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

int clock_rounds(int world_size) { return world_size <= 64 ? 8 : 3; }

std::vector<ClockEstimate> estimate_clock_offsets(Bootstrap& bootstrap, const std::string& label,
                                                  int rounds, Millis timeout) {
  const HostTimer& timer = HostTimer::get();
  const auto deadline = Deadline::after(timeout);
  StoreClient& store = bootstrap.store();
  const int rank = bootstrap.rank(), world = bootstrap.world_size();
  const std::string base = fmt::format("{}/clock/{}/", bootstrap.prefix(), label);
  auto key = [&](int r, int k, const char* what) { return fmt::format("{}{}/{}/{}", base, r, k, what); };

  // Ranks that share a host share its CLOCK_MONOTONIC, so only the lowest rank of each host
  // (its leader) measures against rank 0; the others add their timer's offset to the host clock.
  // Rank 0 answers H - 1 leaders in turn instead of N - 1 ranks, and the ranks on rank 0's host
  // get their offset to within a few ns instead of half a store round trip.
  Wire mine{};
  ::gethostname(mine.host, sizeof(mine.host) - 1);
  std::vector<std::array<char, sizeof(mine.host)>> names(static_cast<size_t>(world));
  bootstrap.allgather(mine.host, sizeof(mine.host), names.data(), Millis(deadline.remaining_ms()));
  std::vector<int> leader(static_cast<size_t>(world));
  {
    std::map<std::string, int> lowest;
    for (int r = 0; r < world; ++r) {
      const auto& name = names[static_cast<size_t>(r)];
      leader[static_cast<size_t>(r)] = lowest.try_emplace(std::string(name.data(), strnlen(name.data(), name.size())), r).first->second;
    }
  }
  const bool leads = leader[static_cast<size_t>(rank)] == rank;
  if (rank == 0) {
    // Rank 0 answers each other host's leader in turn, reading its timer as late as it can.
    for (int r = 1; r < world; ++r) {
      if (leader[static_cast<size_t>(r)] != r) continue;
      for (int k = 0; k < rounds; ++k) {
        store.get(key(r, k, "ping"), Millis(deadline.remaining_ms()));
        store.set(key(r, k, "pong"), encode(timer.now_ns()));
      }
    }
  } else if (leads) {
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
  timer_against_monotonic(timer, mine.timer_minus_monotonic_ns, mine.paired_read_ns);
  if (rank == 0) mine.at_ns = timer.now_ns();
  // The wall clock next to the timer, the tighter of a few paired reads.
  int64_t best_gap = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < 5; ++i) {
    const int64_t a = timer.now_ns(), u = unix_ns(), b = timer.now_ns();
    if (b - a < best_gap) {
      best_gap = b - a;
      mine.unix_minus_timer_ns = u - (a + (b - a) / 2);
    }
  }

  std::vector<Wire> all(static_cast<size_t>(world));
  bootstrap.allgather(&mine, sizeof(mine), all.data(), Millis(deadline.remaining_ms()));
  std::vector<ClockEstimate> out;
  out.reserve(all.size());
  for (int r = 0; r < world; ++r) {
    const Wire& w = all[static_cast<size_t>(r)];
    ClockEstimate e{r, std::string(w.host, strnlen(w.host, sizeof(w.host))), w.offset_ns, w.rtt_ns, w.at_ns,
                    w.unix_minus_timer_ns};
    const Wire& l = all[static_cast<size_t>(leader[static_cast<size_t>(r)])];
    if (&l != &w) {
      // rank 0 - r = (rank 0 - leader) + (leader - host clock) - (r - host clock); each
      // difference to the host clock adds half its paired read to the bound.
      const int64_t shift = l.timer_minus_monotonic_ns - w.timer_minus_monotonic_ns;
      e.offset_ns = l.offset_ns + shift;
      e.rtt_ns = l.rtt_ns + l.paired_read_ns + w.paired_read_ns;
      e.at_ns = l.at_ns - shift;  // the leader's midpoint on this rank's timer
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace commbench
