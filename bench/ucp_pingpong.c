/* The plainest UCP tag ping-pong: the middle layer of bench/run_p2p_layers.sh, between
 * ucx_perftest (UCX's own tool) and the UCX plugin driven through commbench's ABI
 * (bench/plugin_pingpong.c). It uses UCX the way the plugin does: the receive always returns a
 * request (UCP_OP_ATTR_FLAG_NO_IMM_CMPL), polled with ucp_tag_recv_request_test between
 * ucp_worker_progress calls; the send completes at once or is polled. Worker addresses are
 * exchanged over MPI, which takes no part in the timed loop.
 *
 * Times as commbench's batch method does: rank 0 reads the TSC after each round trip; the
 * reported p50 is the median of those differences over all iterations, halved.
 * Built by run_p2p_layers.sh with mpicc (libopenmpi-dev, libucx-dev); not part of the build.
 * Usage: mpirun -np 2 ucp_pingpong BYTES ITERATIONS   -> "p50_us <value>" on rank 0 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucp/api/ucp.h>

#include "pingpong_common.h"

static void check(ucs_status_t s, const char* what) {
  if (s != UCS_OK) {
    fprintf(stderr, "ucp_pingpong: %s: %s\n", what, ucs_status_string(s));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

struct Side {
  ucp_worker_h worker;
  ucp_ep_h ep;
  char* send;
  char* recv;
  size_t bytes;
};

static void send_one(ucp_worker_h w, ucp_ep_h ep, const void* buf, size_t n) {
  ucp_request_param_t p;
  memset(&p, 0, sizeof p);
  ucs_status_ptr_t r = ucp_tag_send_nbx(ep, buf, n, 7, &p);
  if (r == NULL) return;
  if (UCS_PTR_IS_ERR(r)) check(UCS_PTR_STATUS(r), "ucp_tag_send_nbx");
  while (ucp_request_check_status(r) == UCS_INPROGRESS) ucp_worker_progress(w);
  ucp_request_free(r);
}

static void recv_one(ucp_worker_h w, void* buf, size_t n) {
  ucp_request_param_t p;
  memset(&p, 0, sizeof p);
  p.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  ucs_status_ptr_t r = ucp_tag_recv_nbx(w, buf, n, 7, ~(ucp_tag_t)0, &p);
  if (UCS_PTR_IS_ERR(r)) check(UCS_PTR_STATUS(r), "ucp_tag_recv_nbx");
  ucp_tag_recv_info_t info;
  ucs_status_t s;
  do ucp_worker_progress(w);
  while ((s = ucp_tag_recv_request_test(r, &info)) == UCS_INPROGRESS);
  ucp_request_free(r);
  check(s, "receive");
}

static void send_message(void* ctx) {
  struct Side* s = ctx;
  send_one(s->worker, s->ep, s->send, s->bytes);
}
static void recv_message(void* ctx) {
  struct Side* s = ctx;
  recv_one(s->worker, s->recv, s->bytes);
}

int main(int argc, char** argv) {
  const int rank = pingpong_start(&argc, &argv, 2, "ucp_pingpong BYTES ITERATIONS");
  const size_t bytes = (size_t)pingpong_count(argv[1], "BYTES");
  const int iters = (int)pingpong_count(argv[2], "ITERATIONS");

  ucp_config_t* config;
  check(ucp_config_read(NULL, NULL, &config), "ucp_config_read");
  ucp_params_t params;
  memset(&params, 0, sizeof params);
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  ucp_context_h context;
  check(ucp_init(&params, config, &context), "ucp_init");
  ucp_config_release(config);
  ucp_worker_params_t wp;
  memset(&wp, 0, sizeof wp);
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;
  ucp_worker_h worker;
  check(ucp_worker_create(context, &wp, &worker), "ucp_worker_create");
  ucp_address_t* address;
  size_t address_length;
  check(ucp_worker_get_address(worker, &address, &address_length), "ucp_worker_get_address");
  unsigned long long mine = address_length, theirs = 0;
  MPI_Sendrecv(&mine, 1, MPI_UNSIGNED_LONG_LONG, 1 - rank, 0, &theirs, 1, MPI_UNSIGNED_LONG_LONG, 1 - rank, 0,
               MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  void* peer_address = malloc(theirs);
  MPI_Sendrecv(address, (int)address_length, MPI_BYTE, 1 - rank, 1, peer_address, (int)theirs, MPI_BYTE, 1 - rank,
               1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  ucp_ep_params_t ep_params;
  memset(&ep_params, 0, sizeof ep_params);
  ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
  ep_params.address = (const ucp_address_t*)peer_address;
  ucp_ep_h ep;
  check(ucp_ep_create(worker, &ep_params, &ep), "ucp_ep_create");
  ucp_worker_release_address(worker, address);

  /* Page-aligned, as the plugin's buffers are (the core rounds them to pages). */
  const size_t alloc = (bytes + 4095) / 4096 * 4096;
  struct Side side = {worker, ep, aligned_alloc(4096, alloc), aligned_alloc(4096, alloc), bytes};
  if (side.send == NULL || side.recv == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  memset(side.send, 0, alloc);
  memset(side.recv, 0, alloc);
  pingpong_loop(rank, iters, send_message, recv_message, &side);
  /* Endpoint, worker and context go with the process: nothing of theirs is timed. */
  MPI_Finalize();
  return 0;
}
