// The frozen layout of ABI 1.x on x86-64 LP64 (Linux). Every number below is part of the contract
// with plugins already built: if one of these fails, the change breaks binary compatibility.
// Appending a field at a new minor version means ADDING lines here and bumping CB_ABI_MINOR,
// never editing an existing line. docs/plugin-abi.md has the rules.
//
// Each entry is checked twice: by static_assert (the build fails, naming the field) and by a
// runtime EXPECT over the same table (define COMMBENCH_ABI_LAYOUT_RUNTIME_ONLY to turn the
// static_asserts off and get the full list of differences at once).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include <gtest/gtest.h>

#include "commbench/backend.h"

static_assert(sizeof(void*) == 8 && sizeof(size_t) == 8 && sizeof(long) == 8,
              "these numbers are for LP64 targets (x86-64, aarch64 Linux)");

namespace {

// ---- function pointer types as the 1.0 header spells them (a changed signature is a break too)
using EmitFn = void (*)(void*, const char*, const char*);
using LogFn = void (*)(void*, cb_log_level, const char*);

// X(struct, field, offset, type...)
#define CB_ABI_FIELDS(X)                                                                          \
  X(cb_capabilities, struct_size, 0, size_t)                                                      \
  X(cb_capabilities, ops, 8, uint64_t)                                                            \
  X(cb_capabilities, dtypes, 16, uint64_t)                                                        \
  X(cb_capabilities, reduce_dtypes, 24, uint64_t)                                                 \
  X(cb_capabilities, redops, 32, uint64_t)                                                        \
  X(cb_capabilities, mem_types, 40, uint64_t)                                                     \
  X(cb_capabilities, flags, 48, uint64_t)                                                         \
  X(cb_option, struct_size, 0, size_t)                                                            \
  X(cb_option, key, 8, const char*)                                                               \
  X(cb_option, value, 16, const char*)                                                            \
  X(cb_host_services, struct_size, 0, size_t)                                                     \
  X(cb_host_services, ctx, 8, void*)                                                              \
  X(cb_host_services, rank, 16, int32_t)                                                          \
  X(cb_host_services, world_size, 20, int32_t)                                                    \
  X(cb_host_services, local_rank, 24, int32_t)                                                    \
  X(cb_host_services, local_world_size, 28, int32_t)                                              \
  X(cb_host_services, options, 32, const cb_option*)                                              \
  X(cb_host_services, num_options, 40, size_t)                                                    \
  X(cb_host_services, log, 48, LogFn)                                                             \
  X(cb_host_services, bootstrap_allgather, 56,                                                    \
    cb_status (*)(void*, const void*, size_t, void*, int32_t))                                    \
  X(cb_host_services, bootstrap_broadcast, 64, cb_status (*)(void*, void*, size_t, int32_t, int32_t)) \
  X(cb_host_services, bootstrap_barrier, 72, cb_status (*)(void*, int32_t))                       \
  X(cb_host_services, kv_set, 80, cb_status (*)(void*, const char*, const void*, size_t, int32_t)) \
  X(cb_host_services, kv_get, 88,                                                                 \
    cb_status (*)(void*, const char*, void*, size_t, size_t*, int32_t))                           \
  /* 1.3 */                                                                                       \
  X(cb_host_services, flags, 96, uint64_t)                                                        \
  X(cb_op_args, struct_size, 0, size_t)                                                           \
  X(cb_op_args, op, 8, cb_op)                                                                     \
  X(cb_op_args, sendbuf, 16, const void*)                                                         \
  X(cb_op_args, recvbuf, 24, void*)                                                               \
  X(cb_op_args, count, 32, size_t)                                                                \
  X(cb_op_args, dtype, 40, cb_dtype)                                                              \
  X(cb_op_args, redop, 44, cb_redop)                                                              \
  X(cb_op_args, root, 48, int32_t)                                                                \
  X(cb_op_args, peer, 52, int32_t)                                                                \
  X(cb_op_args, mem_type, 56, cb_mem)                                                             \
  X(cb_op_args, stream, 64, void*)                                                                \
  X(cb_op_args, tag, 72, uint32_t)                                                                \
  X(cb_backend_api, struct_size, 0, size_t)                                                       \
  X(cb_backend_api, abi_major, 8, uint32_t)                                                       \
  X(cb_backend_api, abi_minor, 12, uint32_t)                                                      \
  X(cb_backend_api, name, 16, const char*)                                                        \
  X(cb_backend_api, version, 24, const char*)                                                     \
  X(cb_backend_api, description, 32, const char*)                                                 \
  X(cb_backend_api, error_code, 40, cb_status (*)(const cb_error*))                               \
  X(cb_backend_api, error_message, 48, const char* (*)(const cb_error*))                          \
  X(cb_backend_api, error_destroy, 56, void (*)(cb_error*))                                       \
  X(cb_backend_api, get_capabilities, 64, cb_error* (*)(const cb_backend*, cb_capabilities*))     \
  X(cb_backend_api, init, 72, cb_error* (*)(const cb_host_services*, cb_backend**))               \
  X(cb_backend_api, finalize, 80, cb_error* (*)(cb_backend*))                                     \
  X(cb_backend_api, get_metadata, 88, cb_error* (*)(const cb_backend*, EmitFn, void*))            \
  X(cb_backend_api, comm_create, 96, cb_error* (*)(cb_backend*, int32_t, cb_comm**))              \
  X(cb_backend_api, comm_destroy, 104, cb_error* (*)(cb_comm*))                                   \
  X(cb_backend_api, comm_abort, 112, cb_error* (*)(cb_comm*))                                     \
  X(cb_backend_api, mem_alloc, 120, cb_error* (*)(cb_comm*, cb_mem, size_t, void**))              \
  X(cb_backend_api, mem_free, 128, cb_error* (*)(cb_comm*, cb_mem, void*))                        \
  X(cb_backend_api, post, 136, cb_error* (*)(cb_comm*, const cb_op_args*, cb_request**))          \
  X(cb_backend_api, test, 144, cb_error* (*)(cb_request*, int32_t*))                              \
  X(cb_backend_api, wait, 152, cb_error* (*)(cb_request*, int32_t))                               \
  X(cb_backend_api, request_free, 160, void (*)(cb_request*))                                     \
  X(cb_backend_api, group_start, 168, cb_error* (*)(cb_comm*))                                    \
  X(cb_backend_api, group_end, 176, cb_error* (*)(cb_comm*))                                     \
  /* 1.1 */                                                                                       \
  X(cb_backend_api, complete, 184, cb_error* (*)(cb_comm*, const cb_op_args*, int32_t))         \
  /* 1.2 */                                                                                       \
  X(cb_backend_api, option_descriptors, 192, const cb_option_descriptor*)                         \
  X(cb_backend_api, num_option_descriptors, 200, size_t)                                          \
  /* 1.3 */                                                                                       \
  X(cb_backend_api, enqueue, 208, cb_error* (*)(cb_comm*, const cb_op_args*))                     \
  X(cb_option_descriptor, struct_size, 0, size_t)                                                 \
  X(cb_option_descriptor, name, 8, const char*)                                                   \
  X(cb_option_descriptor, type, 16, cb_option_type)                                               \
  X(cb_option_descriptor, default_value, 24, const char*)                                         \
  X(cb_option_descriptor, doc, 32, const char*)                                                   \
  X(cb_option_descriptor, choices, 40, const char* const*)                                        \
  X(cb_option_descriptor, min, 48, int64_t)                                                       \
  X(cb_option_descriptor, max, 56, int64_t)

// X(struct, sizeof, CB_STRUCT_SIZE(struct, last), last): struct_size must be CB_STRUCT_SIZE, not
// sizeof. cb_op_args shows why: it has 4 bytes of tail padding after `tag`, where a uint32 field
// appended in a later minor would land. A 1.0 producer that wrote sizeof (80) would claim to have
// filled that future field with padding garbage; CB_STRUCT_SIZE (76) says it did not.
#define CB_ABI_STRUCTS(X)                \
  X(cb_capabilities, 56, 56, flags)      \
  X(cb_option, 24, 24, value)            \
  X(cb_host_services, 104, 104, flags)   \
  X(cb_op_args, 80, 76, tag)             \
  X(cb_backend_api, 216, 216, enqueue)  \
  X(cb_option_descriptor, 64, 64, max)

// X(enumerator, value)
#define CB_ABI_ENUM_VALUES(X)                                                                  \
  X(CB_OP_ALLREDUCE, 0) X(CB_OP_ALLGATHER, 1) X(CB_OP_REDUCESCATTER, 2) X(CB_OP_BROADCAST, 3)  \
  X(CB_OP_REDUCE, 4) X(CB_OP_ALLTOALL, 5) X(CB_OP_GATHER, 6) X(CB_OP_SCATTER, 7)               \
  X(CB_OP_BARRIER, 8) X(CB_OP_SEND, 9) X(CB_OP_RECV, 10) X(CB_OP_COUNT_V1, 11)                 \
  X(CB_DTYPE_INT8, 0) X(CB_DTYPE_UINT8, 1) X(CB_DTYPE_INT32, 2) X(CB_DTYPE_UINT32, 3)          \
  X(CB_DTYPE_INT64, 4) X(CB_DTYPE_UINT64, 5) X(CB_DTYPE_F16, 6) X(CB_DTYPE_BF16, 7)            \
  X(CB_DTYPE_F32, 8) X(CB_DTYPE_F64, 9) X(CB_DTYPE_F8E4M3, 10) X(CB_DTYPE_F8E5M2, 11)          \
  X(CB_DTYPE_COUNT_V1, 12)                                                                     \
  X(CB_REDOP_SUM, 0) X(CB_REDOP_PROD, 1) X(CB_REDOP_MIN, 2) X(CB_REDOP_MAX, 3)                 \
  X(CB_REDOP_AVG, 4) X(CB_REDOP_COUNT_V1, 5)                                                   \
  X(CB_MEM_HOST, 0) X(CB_MEM_HOST_PINNED, 1) X(CB_MEM_CUDA, 2) X(CB_MEM_COUNT_V1, 3)           \
  X(CB_OK, 0) X(CB_ERR_UNIMPLEMENTED, 1) X(CB_ERR_UNAVAILABLE, 2) X(CB_ERR_INVALID_ARGUMENT, 3) \
  X(CB_ERR_TIMEOUT, 4) X(CB_ERR_RESOURCE_EXHAUSTED, 5) X(CB_ERR_INTERNAL, 6) X(CB_ERR_REMOTE, 7) \
  X(CB_LOG_ERROR, 0) X(CB_LOG_WARN, 1) X(CB_LOG_INFO, 2) X(CB_LOG_DEBUG, 3)                    \
  X(CB_CAP_STREAM_ORDERED, 1) X(CB_CAP_NEEDS_PROGRESS, 2) X(CB_CAP_IN_PLACE, 4)               \
  X(CB_CAP_OUT_OF_PLACE, 8) X(CB_CAP_GROUPS, 16) X(CB_CAP_ASYNC, 32)                           \
  X(CB_OPTION_STRING, 0) X(CB_OPTION_INT, 1) X(CB_OPTION_BOOL, 2) X(CB_OPTION_BYTES, 3)       \
  X(CB_OPTION_CHOICE, 4) X(CB_OPTION_TYPE_COUNT_V1_2, 5)                                       \
  X(CB_HOST_SHARED_DEVICE, 1) X(CB_HOST_OWN_CPUS, 2)                                          \
  X(CB_ABI_MAJOR, 1)

// ---- compile-time checks
#ifndef COMMBENCH_ABI_LAYOUT_RUNTIME_ONLY
#define CB_STATIC_FIELD(T, f, off, ...)                                                      \
  static_assert(offsetof(T, f) == (off), "ABI break: " #T "." #f " moved from offset " #off); \
  static_assert(std::is_same_v<decltype(T::f), __VA_ARGS__>, "ABI break: " #T "." #f " changed type");
#define CB_STATIC_STRUCT(T, size, filled, last)                                  \
  static_assert(sizeof(T) == (size), "ABI break: sizeof(" #T ") is not " #size); \
  static_assert(CB_STRUCT_SIZE(T, last) == (filled), "ABI break: " #T "'s struct_size is not " #filled);
#define CB_STATIC_ENUM(e, v) static_assert((e) == (v), "ABI break: " #e " is not " #v);
CB_ABI_FIELDS(CB_STATIC_FIELD)
CB_ABI_STRUCTS(CB_STATIC_STRUCT)
CB_ABI_ENUM_VALUES(CB_STATIC_ENUM)
#endif

// Enums cross the boundary inside structs: they must stay int-sized.
static_assert(sizeof(cb_op) == 4 && sizeof(cb_dtype) == 4 && sizeof(cb_redop) == 4 &&
              sizeof(cb_mem) == 4 && sizeof(cb_status) == 4 && sizeof(cb_log_level) == 4);

// ---- the same tables, as data for the runtime checks
struct FieldLayout {
  const char* name;
  size_t offset, expected_offset;
  bool same_type;
};
#define CB_FIELD_ROW(T, f, off, ...) \
  FieldLayout{#T "." #f, offsetof(T, f), (off), std::is_same_v<decltype(T::f), __VA_ARGS__>},
constexpr FieldLayout kFields[] = {CB_ABI_FIELDS(CB_FIELD_ROW)};

struct StructLayout {
  const char* name;
  size_t size, expected_size, struct_size, expected_struct_size;
};
#define CB_STRUCT_ROW(T, size, filled, last) \
  StructLayout{#T, sizeof(T), (size), CB_STRUCT_SIZE(T, last), (filled)},
constexpr StructLayout kStructs[] = {CB_ABI_STRUCTS(CB_STRUCT_ROW)};

struct EnumValue {
  const char* name;
  long long value, expected;
};
#define CB_ENUM_ROW(e, v) EnumValue{#e, static_cast<long long>(e), (v)},
constexpr EnumValue kEnumValues[] = {CB_ABI_ENUM_VALUES(CB_ENUM_ROW)};

TEST(AbiLayout, EveryFieldKeepsItsOffsetAndType) {
  for (const auto& f : kFields) {
    EXPECT_EQ(f.offset, f.expected_offset) << f.name << " moved";
    EXPECT_TRUE(f.same_type) << f.name << " changed type";
  }
}

TEST(AbiLayout, EveryStructKeepsItsSize) {
  for (const auto& s : kStructs) {
    EXPECT_EQ(s.size, s.expected_size) << s.name;
    EXPECT_EQ(s.struct_size, s.expected_struct_size) << s.name << ": CB_STRUCT_SIZE of its last field";
  }
}

TEST(AbiLayout, EveryEnumValueIsFrozen) {
  for (const auto& e : kEnumValues) EXPECT_EQ(e.value, e.expected) << e.name;
}

TEST(AbiLayout, EntrySymbolCarriesTheMajorVersion) {
  EXPECT_STREQ(CB_ENTRY_SYMBOL, "commbench_backend_v1");
  const cb_entry_fn entry = nullptr;  // the entry's type: const cb_backend_api* (*)(void)
  static_assert(std::is_same_v<decltype(entry), const cb_entry_fn>);
  static_assert(std::is_same_v<cb_entry_fn, const cb_backend_api* (*)(void)>);
  EXPECT_EQ(entry, nullptr);
}

// An older plugin reports a smaller struct_size; CB_STRUCT_SIZE of its last field is what it
// would have written. The loader relies on that arithmetic when it zero-fills the rest.
TEST(AbiLayout, StructSizeMacroCoversAPrefixOfTheTable) {
  EXPECT_EQ(CB_STRUCT_SIZE(cb_backend_api, request_free), offsetof(cb_backend_api, group_start));
  EXPECT_EQ(CB_STRUCT_SIZE(cb_backend_api, abi_minor), 16u);
  EXPECT_LT(CB_STRUCT_SIZE(cb_backend_api, request_free), sizeof(cb_backend_api));
  // What a 1.0 plugin's table reports: everything up to group_end, no `complete`.
  EXPECT_EQ(CB_STRUCT_SIZE(cb_backend_api, group_end), 184u);
  EXPECT_EQ(CB_STRUCT_SIZE(cb_backend_api, group_end), offsetof(cb_backend_api, complete));
}

}  // namespace
