/* The Open MPI reference of bench/run_mpi_bench.sh: MPI_Allreduce, MPI_Allgather and
 * MPI_Reduce_scatter_block (f32, sum) timed the way commbench's default method (`batch`) times
 * its ops: per size, untimed warm-ups, one MPI_Barrier, then the clock around N back-to-back
 * calls; per rank elapsed / N, averaged over the ranks. Sizes are per rank, as commbench's
 * `bytes`: the allreduce buffer, the allgather contribution, the reduce-scatter result block.
 * In place uses MPI_IN_PLACE with the layouts of the MPI standard (which are commbench's).
 * One JSON line per (op, size) on rank 0's stdout.
 *
 * Built by run_mpi_bench.sh with mpicc (Debian's libopenmpi-dev); not part of the build.
 * Usage: mpirun -np N mpi_direct --ops allreduce,allgather,reducescatter --sizes 65536,...
 *          --placement in|out --warmup W --iters-small N --iters-large N --large-from BYTES */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kAllreduce, kAllgather, kReducescatter };
static const char* const kOpNames[] = {"allreduce", "allgather", "reducescatter"};

static void usage(const char* why) {
  fprintf(stderr, "mpi_direct: %s\n", why);
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static int parse_list(char* text, long long* out, int max) {
  int n = 0;
  for (char* tok = strtok(text, ","); tok != NULL && n < max; tok = strtok(NULL, ",")) out[n++] = atoll(tok);
  return n;
}

static void run_op(int op, int in_place, float* send, float* recv, size_t count, int rank, int world) {
  const int c = (int)count;
  switch (op) {
    case kAllreduce:
      if (in_place) MPI_Allreduce(MPI_IN_PLACE, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else MPI_Allreduce(send, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case kAllgather:  /* in place: the own block already at recv + rank*count */
      if (in_place) MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, c, MPI_FLOAT, MPI_COMM_WORLD);
      else MPI_Allgather(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, MPI_COMM_WORLD);
      break;
    case kReducescatter:  /* in place: input and result in recv, the result block first */
      if (in_place) MPI_Reduce_scatter_block(MPI_IN_PLACE, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      else MPI_Reduce_scatter_block(send, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
  }
  (void)rank;
  (void)world;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  long long sizes[64];
  int nsizes = 0, ops[3], nops = 0, in_place = 0, warmup = 5, iters_small = 200, iters_large = 20;
  long long large_from = 4 << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--sizes")) nsizes = parse_list(argv[i + 1], sizes, 64);
    else if (!strcmp(argv[i], "--placement")) in_place = !strcmp(argv[i + 1], "in");
    else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters-small")) iters_small = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--iters-large")) iters_large = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--large-from")) large_from = atoll(argv[i + 1]);
    else if (!strcmp(argv[i], "--ops")) {
      for (char* tok = strtok(argv[i + 1], ","); tok != NULL && nops < 3; tok = strtok(NULL, ",")) {
        int found = -1;
        for (int k = 0; k < 3; ++k)
          if (!strcmp(tok, kOpNames[k])) found = k;
        if (found < 0) usage("unknown op (allreduce, allgather, reducescatter)");
        ops[nops++] = found;
      }
    } else usage("unknown argument");
  }
  if (nsizes == 0 || nops == 0) usage("--ops and --sizes are required");
  long long largest = 0;
  for (int s = 0; s < nsizes; ++s)
    if (sizes[s] > largest) largest = sizes[s];
  /* Every op's buffers fit in world * largest bytes (allgather's output, reduce-scatter's input). */
  const size_t cap = (size_t)largest * (size_t)world;
  float* send = aligned_alloc(4096, (cap + 4095) / 4096 * 4096);
  float* recv = aligned_alloc(4096, (cap + 4095) / 4096 * 4096);
  if (send == NULL || recv == NULL) usage("out of memory");
  for (size_t i = 0; i < cap / sizeof(float); ++i) send[i] = recv[i] = (float)((i + (size_t)rank) % 7);
  for (int o = 0; o < nops; ++o)
    for (int s = 0; s < nsizes; ++s) {
      const size_t count = (size_t)sizes[s] / sizeof(float);
      const int iters = sizes[s] >= large_from ? iters_large : iters_small;
      for (int i = 0; i < warmup; ++i) run_op(ops[o], in_place, send, recv, count, rank, world);
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) run_op(ops[o], in_place, send, recv, count, rank, world);
      const double per_op_us = (MPI_Wtime() - t0) / iters * 1e6;
      double sum = 0;
      MPI_Reduce(&per_op_us, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
      if (rank == 0)
        printf("{\"op\":\"%s\",\"bytes\":%lld,\"world\":%d,\"placement\":\"%s\",\"iters\":%d,\"avg_us\":%.3f}\n",
               kOpNames[ops[o]], sizes[s], world, in_place ? "in" : "out", iters, sum / world);
      fflush(stdout);
    }
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
