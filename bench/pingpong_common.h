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

static int pingpong_ticks_compare(const void* a, const void* b) {
  const unsigned long long x = *(const unsigned long long*)a, y = *(const unsigned long long*)b;
  return x < y ? -1 : x > y;
}

/* CLOCK_MONOTONIC read between two counter reads, the tightest bracket of 16 tries: the
 * counter at the read is the bracket's midpoint. A bracket with a preemption in it is not used,
 * which is what a single pair of reads would have done (a calibration 5x off was seen that way). */
static void pingpong_paired_read(unsigned long long* ticks, double* ns) {
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
}

static double half_round_trip_p50_us(unsigned long long* ticks, int n) {
  unsigned long long c0, c1;
  double ns0, ns1;
  pingpong_paired_read(&c0, &ns0);
  struct timespec pause = {0, 100 * 1000 * 1000};
  nanosleep(&pause, NULL);
  pingpong_paired_read(&c1, &ns1);
  if (!(c1 > c0 && ns1 > ns0)) return -1;  /* no number rather than a wrong one */
  const double ticks_per_ns = (double)(c1 - c0) / (ns1 - ns0);
  qsort(ticks, (size_t)n, sizeof *ticks, pingpong_ticks_compare);
  return (double)ticks[n / 2] / ticks_per_ns / 2.0 / 1000.0;
}

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

/* 1,000 untimed round trips, then `iters` timed ones (rank 0 sends first); rank 0 prints
 * "p50_us <value>". Static, called once: the compiler sees through the function pointers. */
static void pingpong_loop(int rank, int iters, void (*send)(void*), void (*recv)(void*), void* ctx) {
  unsigned long long* ticks = malloc(sizeof(unsigned long long) * (size_t)iters);
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
  if (rank == 0) printf("p50_us %.4f\n", half_round_trip_p50_us(ticks, iters));
  free(ticks);
  MPI_Barrier(MPI_COMM_WORLD);
}
