/*
 * commbench backend plugin ABI, major version 1.
 *
 * This header is the only contract between the commbench core and a backend plugin.
 * It is C99 on purpose: no C++ types, no exceptions, no STL across the boundary.
 *
 * Compatibility rules (docs/plugin-abi.md has the full list):
 *  - Within one major version nothing here is removed, reordered, renamed or retyped.
 *    New struct fields and new enum values are only ever appended (minor version bump).
 *  - Every struct starts with `size_t struct_size`. The producer of a struct fills it with
 *    the size it was compiled with; the consumer reads only the fields that fit in it and
 *    treats the missing ones as zero/NULL. Use CB_STRUCT_SIZE(type, last_field).
 *  - A NULL optional function pointer means "not supported", never a crash.
 *  - The entry symbol carries the major version: a major bump is a new symbol.
 *  - Counts are in elements, sizes in bytes, timeouts in milliseconds (negative = no limit).
 */
#ifndef COMMBENCH_BACKEND_H
#define COMMBENCH_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CB_ABI_MAJOR 1
#define CB_ABI_MINOR 3

/* The one symbol a plugin exports: `const cb_backend_api* commbench_backend_v1(void)`.
 * Calling it must be pure: no library initialisation, no device access, no threads.
 * Listing plugins and validating experiments call it on machines without the backend's hardware. */
#define CB_ENTRY_SYMBOL "commbench_backend_v1"

#if defined(_WIN32)
#define CB_EXPORT __declspec(dllexport)
#else
#define CB_EXPORT __attribute__((visibility("default")))
#endif

/* Size of a struct up to and including `last_field`: what struct_size must hold. */
#define CB_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* ------------------------------------------------------------------ enums (values frozen) */

typedef enum cb_op {
  CB_OP_ALLREDUCE = 0,
  CB_OP_ALLGATHER = 1,
  CB_OP_REDUCESCATTER = 2,
  CB_OP_BROADCAST = 3,
  CB_OP_REDUCE = 4,
  CB_OP_ALLTOALL = 5,
  CB_OP_GATHER = 6,
  CB_OP_SCATTER = 7,
  CB_OP_BARRIER = 8,
  CB_OP_SEND = 9,
  CB_OP_RECV = 10,
  CB_OP_COUNT_V1 = 11 /* number of ops defined in 1.0; later minors may append */
} cb_op;

typedef enum cb_dtype {
  CB_DTYPE_INT8 = 0,
  CB_DTYPE_UINT8 = 1,
  CB_DTYPE_INT32 = 2,
  CB_DTYPE_UINT32 = 3,
  CB_DTYPE_INT64 = 4,
  CB_DTYPE_UINT64 = 5,
  CB_DTYPE_F16 = 6,    /* IEEE 754 binary16 */
  CB_DTYPE_BF16 = 7,   /* bfloat16 */
  CB_DTYPE_F32 = 8,
  CB_DTYPE_F64 = 9,
  CB_DTYPE_F8E4M3 = 10, /* OCP FP8 E4M3 (finite-only, "fn") */
  CB_DTYPE_F8E5M2 = 11, /* OCP FP8 E5M2 */
  CB_DTYPE_COUNT_V1 = 12
} cb_dtype;

typedef enum cb_redop {
  CB_REDOP_SUM = 0,
  CB_REDOP_PROD = 1,
  CB_REDOP_MIN = 2,
  CB_REDOP_MAX = 3,
  CB_REDOP_AVG = 4,
  CB_REDOP_COUNT_V1 = 5
} cb_redop;

typedef enum cb_mem {
  CB_MEM_HOST = 0,        /* pageable host memory */
  CB_MEM_HOST_PINNED = 1, /* page-locked host memory (cudaHostAlloc or equivalent) */
  CB_MEM_CUDA = 2,        /* CUDA device memory */
  CB_MEM_COUNT_V1 = 3
} cb_mem;

/* Status codes. The core decides what to do from the code alone:
 * UNIMPLEMENTED skips one case, UNAVAILABLE skips the whole backend for this run,
 * everything else fails the run. */
typedef enum cb_status {
  CB_OK = 0,
  CB_ERR_UNIMPLEMENTED = 1,      /* this case (op/dtype/redop/placement) is not supported */
  CB_ERR_UNAVAILABLE = 2,        /* the backend cannot run here (no device, library missing) */
  CB_ERR_INVALID_ARGUMENT = 3,   /* bad option value, bad buffer, bad count */
  CB_ERR_TIMEOUT = 4,            /* a deadline passed */
  CB_ERR_RESOURCE_EXHAUSTED = 5, /* out of memory or another resource */
  CB_ERR_INTERNAL = 6,           /* anything else; the message says what */
  CB_ERR_REMOTE = 7              /* a peer failed or went away */
} cb_status;

/* 1.2: the kind of value an option takes (cb_option_descriptor.type). Every value reaches the
 * plugin as text (cb_option.value); the type says which texts are valid. */
typedef enum cb_option_type {
  CB_OPTION_STRING = 0, /* any text; the doc says what is meaningful */
  CB_OPTION_INT = 1,    /* a whole decimal number in [min, max] */
  CB_OPTION_BOOL = 2,   /* on/off, true/false, yes/no, 1/0 */
  CB_OPTION_BYTES = 3,  /* a byte count, optional suffix B, KiB, MiB or GiB ("8KiB") */
  CB_OPTION_CHOICE = 4, /* one of the descriptor's `choices` */
  CB_OPTION_TYPE_COUNT_V1_2 = 5
} cb_option_type;

typedef enum cb_log_level {
  CB_LOG_ERROR = 0,
  CB_LOG_WARN = 1,
  CB_LOG_INFO = 2,
  CB_LOG_DEBUG = 3
} cb_log_level;

/* Capability flags (cb_capabilities.flags). */
#define CB_CAP_STREAM_ORDERED ((uint64_t)1 << 0) /* ops are enqueued on cb_op_args.stream */
#define CB_CAP_NEEDS_PROGRESS ((uint64_t)1 << 1) /* requests advance only while test() is called */
#define CB_CAP_IN_PLACE ((uint64_t)1 << 2)       /* supports sendbuf == recvbuf layouts */
#define CB_CAP_OUT_OF_PLACE ((uint64_t)1 << 3)   /* supports distinct send and recv buffers */
#define CB_CAP_GROUPS ((uint64_t)1 << 4)         /* group_start/group_end batch posts */
#define CB_CAP_ASYNC ((uint64_t)1 << 5)          /* post returns before the op completes */
/* With CB_CAP_STREAM_ORDERED, collectives posted while cb_op_args.stream is being captured
 * (cudaStreamBeginCapture) only record their work into the graph: post makes no call that is
 * illegal during capture (no synchronisation, no query of that stream). Such a request is never
 * waited for: the host releases it after the post, and the graph's launch is its completion. */
#define CB_CAP_GRAPH_CAPTURE ((uint64_t)1 << 6)

#define CB_BIT(x) ((uint64_t)1 << (x))

/* ------------------------------------------------------------------ opaque handles */

typedef struct cb_error cb_error;     /* owned by the plugin; free with api->error_destroy */
typedef struct cb_backend cb_backend; /* one per process, from init() */
typedef struct cb_comm cb_comm;       /* one communicator over all ranks of the run */
typedef struct cb_request cb_request; /* one posted op; free with request_free */

/* ------------------------------------------------------------------ structs */

/* What a backend can do. Bits are indexed by the enum values above (CB_BIT(CB_OP_...)). */
typedef struct cb_capabilities {
  size_t struct_size;
  uint64_t ops;           /* CB_BIT(cb_op) */
  uint64_t dtypes;        /* dtypes for data movement (allgather, broadcast, send, ...) */
  uint64_t reduce_dtypes; /* dtypes for reductions (allreduce, reducescatter, reduce) */
  uint64_t redops;        /* CB_BIT(cb_redop) */
  uint64_t mem_types;     /* CB_BIT(cb_mem) */
  uint64_t flags;         /* CB_CAP_* */
} cb_capabilities;

/* One option from the experiment's [run.options.<backend>] table. Strings owned by the host,
 * valid until finalize() returns. */
typedef struct cb_option {
  size_t struct_size;
  const char* key;
  const char* value;
} cb_option;

/* 1.2: one option a plugin accepts, so that the core can check an experiment's options (and list
 * them) without initialising the plugin. Static data owned by the plugin, valid while it is loaded. */
typedef struct cb_option_descriptor {
  size_t struct_size;         /* CB_STRUCT_SIZE(cb_option_descriptor, max) */
  const char* name;           /* the key in [run.options.<backend>]; unique within the plugin */
  cb_option_type type;
  const char* default_value;  /* in the type's syntax; "" = no fixed default (the doc says what) */
  const char* doc;            /* one line */
  const char* const* choices; /* CB_OPTION_CHOICE: the allowed values, NULL-terminated; else NULL */
  int64_t min;                /* CB_OPTION_INT: the inclusive range of valid values */
  int64_t max;
} cb_option_descriptor;

/* Services the host hands to the plugin at init. All bootstrap functions are collective over the
 * ranks of the run (except kv_set/kv_get), block, and return a cb_status. */
typedef struct cb_host_services {
  size_t struct_size;
  void* ctx; /* pass back as the first argument of every callback */

  int32_t rank;             /* this process's rank in the run, 0..world_size-1 */
  int32_t world_size;       /* ranks in the run */
  int32_t local_rank;       /* rank among the ranks on this host (selects a GPU) */
  int32_t local_world_size; /* ranks on this host */

  const cb_option* options; /* the run's options for this backend */
  size_t num_options;

  void (*log)(void* ctx, cb_log_level level, const char* message);

  /* Every rank contributes `bytes` from `send`; `recv` receives world_size*bytes in rank order. */
  cb_status (*bootstrap_allgather)(void* ctx, const void* send, size_t bytes, void* recv,
                                   int32_t timeout_ms);
  /* `bytes` from `root`'s buffer end up in every rank's buffer. */
  cb_status (*bootstrap_broadcast)(void* ctx, void* buffer, size_t bytes, int32_t root,
                                   int32_t timeout_ms);
  cb_status (*bootstrap_barrier)(void* ctx, int32_t timeout_ms);
  /* Key/value store scoped to this run. kv_get waits until the key exists or the timeout passes;
   * it writes at most `capacity` bytes and always sets *length to the value's full length. */
  cb_status (*kv_set)(void* ctx, const char* key, const void* value, size_t length,
                      int32_t timeout_ms);
  cb_status (*kv_get)(void* ctx, const char* key, void* value, size_t capacity, size_t* length,
                      int32_t timeout_ms);

  /* ---- 1.3 (read only when struct_size covers it; absent = 0) */
  uint64_t flags; /* CB_HOST_* */
} cb_host_services;

/* 1.3 host flags (cb_host_services.flags). */
/* Several ranks of this host were bound to one device on purpose (the run setting
 * oversubscribe_gpu = true): a correctness-only mode, never a performance number. A backend whose
 * library refuses two ranks on one device (NCCL: "Duplicate GPU detected") makes each rank look
 * like its own host instead (NCCL_HOSTID per rank, so its ranks talk over the network transport). */
#define CB_HOST_SHARED_DEVICE ((uint64_t)1 << 0)
/* The host bound this rank to CPUs that no other rank of this host uses (the run setting
 * cpu_binding, with no more local ranks than cores or NUMA nodes): a backend that sizes its
 * progress by the CPUs it may use (UCX's `progress = auto`) may count them as the rank's alone
 * rather than as the host's share. Absent when the ranks are unbound or share CPUs. */
#define CB_HOST_OWN_CPUS ((uint64_t)1 << 1)

/* Arguments of one operation. Count semantics follow NCCL:
 *  allreduce, broadcast, reduce, send, recv: count elements in sendbuf and recvbuf.
 *  allgather: sendbuf has count, recvbuf count*world_size (rank r's block at r*count).
 *  reducescatter: sendbuf has count*world_size, recvbuf count.
 *  alltoall: sendbuf and recvbuf count*world_size; block j goes to / comes from rank j.
 *  gather: sendbuf count; recvbuf at root count*world_size.
 *  scatter: sendbuf at root count*world_size; recvbuf count.
 *  barrier: no buffers.
 * In-place means recvbuf == sendbuf (allgather: sendbuf == recvbuf + rank*count;
 * reducescatter: recvbuf == sendbuf + rank*count), as in NCCL. Out of place, sendbuf is
 * read-only; no byte outside the sizes above may be written (the core's check looks). */
typedef struct cb_op_args {
  size_t struct_size;
  cb_op op;
  const void* sendbuf;
  void* recvbuf;
  size_t count;
  cb_dtype dtype;
  cb_redop redop; /* reductions only */
  int32_t root;   /* broadcast, reduce, gather, scatter */
  int32_t peer;   /* send, recv */
  cb_mem mem_type;
  void* stream;  /* stream-ordered backends: e.g. a cudaStream_t; NULL = backend's default */
  uint32_t tag;  /* send/recv matching; 0 is fine when messages between a pair are ordered */
} cb_op_args;

/* ------------------------------------------------------------------ the function table */

typedef struct cb_backend_api {
  size_t struct_size;
  uint32_t abi_major; /* CB_ABI_MAJOR the plugin was built against */
  uint32_t abi_minor; /* CB_ABI_MINOR the plugin was built against */
  const char* name;        /* short name used in experiment files, e.g. "gloo" */
  const char* version;     /* plugin version string */
  const char* description; /* one line */

  /* Errors are plugin-allocated objects. Every function below that returns cb_error* returns
   * NULL on success; the caller owns a non-NULL error and frees it with error_destroy. */
  cb_status (*error_code)(const cb_error* error);
  const char* (*error_message)(const cb_error* error); /* valid until error_destroy */
  void (*error_destroy)(cb_error* error);

  /* Capabilities. With backend == NULL: the static set, callable before init (must not touch
   * hardware). With a backend from init: the set this process really has. */
  cb_error* (*get_capabilities)(const cb_backend* backend, cb_capabilities* out);

  /* Once per process. `host` and everything it points to stays valid until finalize. */
  cb_error* (*init)(const cb_host_services* host, cb_backend** out);
  cb_error* (*finalize)(cb_backend* backend);

  /* Describe the backend for metadata: calls emit(ctx, key, value) for each fact (library
   * version, transport, device...). Optional. */
  cb_error* (*get_metadata)(const cb_backend* backend,
                            void (*emit)(void* ctx, const char* key, const char* value),
                            void* ctx);

  /* Collective over all ranks of the run; uses the host's bootstrap services. */
  cb_error* (*comm_create)(cb_backend* backend, int32_t timeout_ms, cb_comm** out);
  cb_error* (*comm_destroy)(cb_comm* comm);
  /* Optional: tear down without waiting for peers (after a timeout or a peer's failure). */
  cb_error* (*comm_abort)(cb_comm* comm);

  /* Optional buffer management. mem_alloc lets a backend hand out memory it prefers (registered,
   * device, pinned); without it the host allocates. Alignment is at least 256 bytes. */
  cb_error* (*mem_alloc)(cb_comm* comm, cb_mem mem_type, size_t bytes, void** out);
  cb_error* (*mem_free)(cb_comm* comm, cb_mem mem_type, void* ptr);

  /* Start one operation. A backend without CB_CAP_ASYNC may complete it before returning.
   * The request must still be completed with test/wait and released with request_free. */
  cb_error* (*post)(cb_comm* comm, const cb_op_args* args, cb_request** out);
  /* *done = 1 once the op is complete (for stream-ordered backends: enqueued work finished). */
  cb_error* (*test)(cb_request* request, int32_t* done);
  cb_error* (*wait)(cb_request* request, int32_t timeout_ms);
  void (*request_free)(cb_request* request);

  /* Optional: batch the posts in between into one launch (ncclGroupStart/End). */
  cb_error* (*group_start)(cb_comm* comm);
  cb_error* (*group_end)(cb_comm* comm);

  /* ---- 1.1 */
  /* Optional: post, wait and release in one call, no request object. The core uses it for the
   * ops it completes one at a time (pingpong, the synchronising exchanges) and for the timed
   * collectives of a backend that is not stream-ordered, where the request bookkeeping would be
   * part of a sub-microsecond measurement. Same semantics and errors as post followed by
   * wait(timeout_ms). */
  cb_error* (*complete)(cb_comm* comm, const cb_op_args* args, int32_t timeout_ms);

  /* ---- 1.2 */
  /* Optional: every option the plugin accepts. With it `commbench validate` rejects an unknown
   * option or a badly typed value before anything runs; NULL means "not described" (the core
   * checks nothing and init() remains the only judge). Non-NULL with num_option_descriptors == 0
   * means "accepts no options". Read only when struct_size covers num_option_descriptors. */
  const cb_option_descriptor* option_descriptors;
  size_t num_option_descriptors;

  /* ---- 1.3 */
  /* Optional, CB_CAP_STREAM_ORDERED backends only: put the op on args->stream and return, with no
   * request. Its completion is what the stream says (an event the host records after it, a stream
   * synchronisation, a graph launch that contains it). The core uses it where a request's
   * bookkeeping (a completion event, an allocation, a capture query) would be host work between
   * the timing events: back-to-back iterations timed with CUDA events, and CUDA graph capture
   * (with CB_CAP_GRAPH_CAPTURE). Same arguments, checks and errors as post. A plugin without it is
   * driven with post + request_free (capture) or post + wait (timing) as before. */
  cb_error* (*enqueue)(cb_comm* comm, const cb_op_args* args);
} cb_backend_api;

typedef const cb_backend_api* (*cb_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* COMMBENCH_BACKEND_H */
