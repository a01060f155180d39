#include "measure/clock_sync.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <limits>

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
  char host[64];
};

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

  Wire mine{};
  if (rank == 0) {
    // Rank 0 answers each rank's round trips in turn, reading its timer as late as it can.
    for (int r = 1; r < world; ++r)
      for (int k = 0; k < rounds; ++k) {
        store.get(key(r, k, "ping"), Millis(deadline.remaining_ms()));
        store.set(key(r, k, "pong"), encode(timer.now_ns()));
      }
  } else {
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
  ::gethostname(mine.host, sizeof(mine.host) - 1);

  std::vector<Wire> all(static_cast<size_t>(world));
  bootstrap.allgather(&mine, sizeof(mine), all.data(), Millis(deadline.remaining_ms()));
  std::vector<ClockEstimate> out;
  out.reserve(all.size());
  for (int r = 0; r < world; ++r) {
    const Wire& w = all[static_cast<size_t>(r)];
    out.push_back({r, std::string(w.host, strnlen(w.host, sizeof(w.host))), w.offset_ns, w.rtt_ns, w.at_ns,
                   w.unix_minus_timer_ns});
  }
  return out;
}

}  // namespace commbench
