/* What bench/ucp_pingpong.c and bench/plugin_pingpong.c share: the MPI start, the loop and its
 * one statistic, the median of rank 0's TSC differences between consecutive round trips, halved,
 * in microseconds, as commbench's batch method times. The TSC is calibrated against
 * CLOCK_MONOTONIC over 100 ms after the loop, as commbench's HostTimer does (host_timer.cpp).
 * x86-64 with an invariant TSC. */
#pragma once

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

/* MPI_Init; exactly 2 ranks and `args` arguments, or the usage line and exit 2. Returns the rank. */
static int pingpong_start(int* argc, char*** argv, int args, const char* usage) {
  MPI_Init(argc, argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (*argc != args + 1 || size != 2) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 %s\n", usage);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return rank;
}

/* A count from the command line, 1 to 10^9, or the reason and exit 2. */
static long long pingpong_count(const char* text, const char* what) {
  char* end = NULL;
  const long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v <= 0 || v > 1000000000LL) {
    fprintf(stderr, "%s: '%s' is not a count from 1 to 10^9\n", what, text);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return v;
}

static int pingpong_ticks_compare(const void* a, const void* b) {
  const unsigned long long x = *(const unsigned long long*)a, y = *(const unsigned long long*)b;
  return x < y ? -1 : x > y;
}

/* CLOCK_MONOTONIC read between two counter reads, the tightest bracket of 16 tries: the counter
 * at the read is the bracket's midpoint. A bracket with a preemption in it is not used, which is
 * what one unbracketed pair of reads would have done (a calibration several times off was seen
 * that way). False when no bracket qualified. */
static int pingpong_paired_read(unsigned long long* ticks, double* ns) {
  unsigned long long best_gap = ~0ull;
  for (int i = 0; i < 16; ++i) {
    struct timespec t;
    const unsigned long long before = __rdtsc();
    clock_gettime(CLOCK_MONOTONIC, &t);
    const unsigned long long after = __rdtsc();
    if (after > before && after - before < best_gap) {
      best_gap = after - before;
      *ticks = before + (after - before) / 2;
      *ns = (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
    }
  }
  return best_gap != ~0ull;
}

/* Counter ticks per nanosecond over 100 ms; 0 when the calibration failed or is implausible
 * (outside 100 MHz to 20 GHz, HostTimer's bounds). */
static double pingpong_ticks_per_ns(void) {
  unsigned long long c0 = 0, c1 = 0;
  double ns0 = 0, ns1 = 0;
  if (!pingpong_paired_read(&c0, &ns0)) return 0;
  struct timespec pause = {0, 100 * 1000 * 1000};
  nanosleep(&pause, NULL);
  if (!pingpong_paired_read(&c1, &ns1) || !(c1 > c0 && ns1 > ns0)) return 0;
  const double rate = (double)(c1 - c0) / (ns1 - ns0);
  return rate > 0.1 && rate < 20.0 ? rate : 0;
}

/* 1,000 untimed round trips, then `iters` timed ones (rank 0 sends first); rank 0 prints
 * "p50_us <value>" and "tsc_mhz <value>". Static, called once: the compiler sees through the
 * function pointers (no indirect call is left in the loop). */
static void pingpong_loop(int rank, int iters, void (*send)(void*), void (*recv)(void*), void* ctx) {
  unsigned long long* ticks = malloc(sizeof(unsigned long long) * (size_t)iters);
  if (ticks == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int timed = 0; timed < 2; ++timed) {
    const int n = timed ? iters : 1000;
    unsigned long long previous = __rdtsc();
    for (int i = 0; i < n; ++i) {
      if (rank == 0) {
        send(ctx);
        recv(ctx);
      } else {
        recv(ctx);
        send(ctx);
      }
      const unsigned long long now = __rdtsc();
      if (timed) ticks[i] = now - previous;
      previous = now;
    }
  }
  if (rank == 0) {
    const double ticks_per_ns = pingpong_ticks_per_ns();
    if (ticks_per_ns <= 0) {
      fprintf(stderr, "the time-stamp counter's calibration failed or is implausible: no result\n");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    qsort(ticks, (size_t)iters, sizeof *ticks, pingpong_ticks_compare);
    printf("p50_us %.4f\ntsc_mhz %.1f\n", (double)ticks[iters / 2] / ticks_per_ns / 2.0 / 1000.0,
           ticks_per_ns * 1e3);
  }
  free(ticks);
  MPI_Barrier(MPI_COMM_WORLD);
}
