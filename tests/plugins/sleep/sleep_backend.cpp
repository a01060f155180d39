// Test plugin "sleep": an allreduce of known duration, to prove the timing methods' arithmetic
// (tests/integration/test_timing_methods.cpp). Every allreduce on rank r takes `sleep_us`
// (or `sleep_us_rank<r>`) microseconds and talks to no other rank (collectives_are_local), so
// each rank's time is its own and the ranks' times differ as configured; results are not
// reduced (run with check = false). Barriers go through the host's bootstrap as usual.
//
// The sleeps follow a metronome: when an allreduce directly follows another (no other post, such
// as a barrier, in between: back to back), its deadline is the previous deadline + period, so an
// oversleep or a preemption of one op is caught up by the next ones and N back-to-back ops take
// N periods plus the last one's lateness, whatever the machine's load. After any other post (a
// barrier) the period starts from now, so an iteration after a barrier takes one period plus
// its oversleep.
//
// Options ([run.options.sleep]):
//   sleep_us         = period of every rank's allreduce (default 2000)
//   sleep_us_rank<R> = rank R's period instead
//   slow_every       = every k-th allreduce on every rank takes `slow_factor` periods (default 0: never)
//   slow_factor      = default 4
//   slow_first       = the first k allreduces on every rank take `slow_factor` periods (a cold
//                      start: warm-up slower than the timed ops; default 0)
//   async            = 1: allreduce posts return at once (CB_CAP_ASYNC) and complete at their
//                      deadline; the allreduces form one serial channel — each starts when the
//                      previous one ended or when posted, whichever is later — so N posted
//                      together take N periods, as a link would (tests/integration/test_workload.cpp)
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "../common/fault_backend.h"

namespace cbtest {
namespace {
int64_t g_period_ns = 2'000'000;
int64_t g_slow_every = 0;
int64_t g_slow_factor = 4;
int64_t g_slow_first = 0;
int64_t g_deadline_ns = -1;  // the previous allreduce's end, CLOCK_MONOTONIC
uint64_t g_allreduces = 0;
uint64_t g_posts = 0;                 // every post, counted in before_post
uint64_t g_post_of_last_allreduce = 0;
bool g_async = false;

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void sleep_until(int64_t deadline_ns) {
  timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000), static_cast<long>(deadline_ns % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) != 0) {
  }
}
}  // namespace

const char* const kPluginName = "sleep";
const char* const kPluginDescription = "test plugin: allreduce of a known, per-rank duration (no communication)";
const std::vector<std::string> kOptionKeys = {"sleep_us", "slow_every", "slow_factor", "slow_first", "sleep_us_rank0",
                                              "sleep_us_rank1", "sleep_us_rank2", "sleep_us_rank3", "async"};

void configure(const Options& options, const cb_host_services& host) {
  int64_t us = int_option(options, "sleep_us", 2000);
  us = int_option(options, "sleep_us_rank" + std::to_string(host.rank), us);
  if (us <= 0) throw std::invalid_argument("sleep periods must be > 0 microseconds");
  g_period_ns = us * 1000;
  g_slow_every = int_option(options, "slow_every", 0);
  g_slow_factor = int_option(options, "slow_factor", 4);
  g_slow_first = int_option(options, "slow_first", 0);
  g_async = int_option(options, "async", 0) != 0;
  if (g_slow_every < 0 || g_slow_factor < 1 || g_slow_first < 0)
    throw std::invalid_argument("slow_every >= 0, slow_first >= 0 and slow_factor >= 1");
}

bool collectives_are_local() { return true; }
bool posts_are_async() { return g_async; }
int64_t async_completion_ns() { return g_async ? g_deadline_ns : -1; }

void after_allreduce(const cb_host_services&, float*, size_t) {
  ++g_allreduces;
  const bool slow = (g_slow_every > 0 && g_allreduces % static_cast<uint64_t>(g_slow_every) == 0) ||
                    g_allreduces <= static_cast<uint64_t>(std::max<int64_t>(g_slow_first, 0));
  const int64_t period = slow ? g_period_ns * g_slow_factor
                             : g_period_ns;
  if (g_async) {  // the serial channel: no sleep here, test()/wait() see the deadline
    g_deadline_ns = std::max(g_deadline_ns, now_ns()) + period;
    return;
  }
  const bool back_to_back = g_deadline_ns >= 0 && g_posts == g_post_of_last_allreduce + 1;
  g_post_of_last_allreduce = g_posts;
  g_deadline_ns = (back_to_back ? g_deadline_ns : now_ns()) + period;
  sleep_until(g_deadline_ns);
}

void before_post(const cb_host_services&, uint64_t) { ++g_posts; }

}  // namespace cbtest
