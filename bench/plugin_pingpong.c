/* A backend plugin driven through commbench's C ABI alone (core/include/commbench/backend.h),
 * with no commbench core: init, comm_create, mem_alloc, then a ping-pong of `complete` calls
 * (send, then receive on rank 0; the reverse on rank 1). The plugin's bootstrap goes over MPI,
 * which takes no part in the timed loop. The layer between a plain UCP loop
 * (bench/ucp_pingpong.c) and a whole commbench job in bench/run_p2p_layers.sh; any plugin with
 * send/recv and `complete` (ABI 1.1) works.
 *
 * Timing as bench/ucp_pingpong.c (pingpong_common.h). Built by run_p2p_layers.sh with mpicc.
 * Usage: mpirun -np 2 plugin_pingpong PLUGIN.so BYTES ITERATIONS   -> "p50_us <value>" */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commbench/backend.h"
#include "pingpong_common.h"

static const cb_backend_api* api;

static void check(cb_error* e, const char* what) {
  if (e != NULL) {
    fprintf(stderr, "plugin_pingpong: %s: %s\n", what, api->error_message(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

static cb_status allgather(void* ctx, const void* send, size_t bytes, void* recv, int32_t timeout_ms) {
  (void)ctx, (void)timeout_ms;
  return MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD) == MPI_SUCCESS
             ? CB_OK : CB_ERR_INTERNAL;
}
static cb_status broadcast(void* ctx, void* buffer, size_t bytes, int32_t root, int32_t timeout_ms) {
  (void)ctx, (void)timeout_ms;
  return MPI_Bcast(buffer, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD) == MPI_SUCCESS ? CB_OK : CB_ERR_INTERNAL;
}
static cb_status barrier(void* ctx, int32_t timeout_ms) {
  (void)ctx, (void)timeout_ms;
  return MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS ? CB_OK : CB_ERR_INTERNAL;
}
/* No key/value store here: a plugin that needs one fails init and says so. */
static cb_status kv_set(void* ctx, const char* key, const void* value, size_t length, int32_t timeout_ms) {
  (void)ctx, (void)key, (void)value, (void)length, (void)timeout_ms;
  return CB_ERR_UNIMPLEMENTED;
}
static cb_status kv_get(void* ctx, const char* key, void* value, size_t capacity, size_t* length, int32_t timeout_ms) {
  (void)ctx, (void)key, (void)value, (void)capacity, (void)length, (void)timeout_ms;
  return CB_ERR_UNIMPLEMENTED;
}
static void log_message(void* ctx, cb_log_level level, const char* message) {
  (void)ctx;
  if (level <= CB_LOG_WARN) fprintf(stderr, "plugin_pingpong: plugin: %s\n", message);
}

struct Side {
  cb_comm* comm;
  cb_op_args send;
  cb_op_args recv;
};
static void send_message(void* ctx) {
  struct Side* s = ctx;
  check(api->complete(s->comm, &s->send, -1), "send");
}
static void recv_message(void* ctx) {
  struct Side* s = ctx;
  check(api->complete(s->comm, &s->recv, -1), "recv");
}

int main(int argc, char** argv) {
  const int rank = pingpong_start(&argc, &argv, 3, "plugin_pingpong PLUGIN.so BYTES ITERATIONS");
  const size_t bytes = (size_t)pingpong_count(argv[2], "BYTES");
  const int iters = (int)pingpong_count(argv[3], "ITERATIONS");
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr, "plugin_pingpong: %s\n", dlerror());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const cb_backend_api* (*entry)(void) = (const cb_backend_api* (*)(void))dlsym(library, "commbench_backend_v1");
  /* `complete` is ABI 1.1: read only where the plugin's table is that long (backend.h). */
  if (entry == NULL || (api = entry()) == NULL || api->struct_size < CB_STRUCT_SIZE(cb_backend_api, complete) ||
      api->complete == NULL) {
    fprintf(stderr, "plugin_pingpong: %s is not a commbench plugin with `complete` (ABI 1.1)\n", argv[1]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }

  cb_host_services host;
  memset(&host, 0, sizeof host);
  host.struct_size = sizeof host;
  host.rank = rank;
  host.world_size = 2;
  host.local_rank = rank;
  host.local_world_size = 2;
  host.log = log_message;
  host.bootstrap_allgather = allgather;
  host.bootstrap_broadcast = broadcast;
  host.bootstrap_barrier = barrier;
  host.kv_set = kv_set;
  host.kv_get = kv_get;
  cb_backend* backend;
  check(api->init(&host, &backend), "init");
  cb_comm* comm;
  check(api->comm_create(backend, 60000, &comm), "comm_create");
  const size_t alloc = bytes < 4096 ? 4096 : (bytes + 4095) / 4096 * 4096;  /* as the core rounds */
  void *send = NULL, *recv = NULL;
  if (api->mem_alloc != NULL) {
    check(api->mem_alloc(comm, CB_MEM_HOST, alloc, &send), "mem_alloc");
    check(api->mem_alloc(comm, CB_MEM_HOST, alloc, &recv), "mem_alloc");
  } else {
    send = aligned_alloc(4096, alloc);
    recv = aligned_alloc(4096, alloc);
    if (send == NULL || recv == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
  }
  memset(send, 0, alloc);
  memset(recv, 0, alloc);
  cb_op_args s;
  memset(&s, 0, sizeof s);
  s.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
  s.sendbuf = send;
  s.recvbuf = recv;
  s.count = bytes;
  s.dtype = CB_DTYPE_UINT8;
  s.peer = 1 - rank;
  s.mem_type = CB_MEM_HOST;
  cb_op_args r = s;
  s.op = CB_OP_SEND;
  r.op = CB_OP_RECV;

  struct Side side = {comm, s, r};
  pingpong_loop(rank, iters, send_message, recv_message, &side);
  if (api->mem_alloc != NULL) {
    check(api->mem_free(comm, CB_MEM_HOST, send), "mem_free");
    check(api->mem_free(comm, CB_MEM_HOST, recv), "mem_free");
  }
  check(api->comm_destroy(comm), "comm_destroy");
  check(api->finalize(backend), "finalize");
  MPI_Finalize();
  return 0;
}
