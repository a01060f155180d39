/* Compiles the ABI header as strict C99 (-std=c99 -pedantic -Werror, see CMakeLists.txt), so a
 * C++-ism or compiler extension slipping into backend.h fails the build. It also writes a minimal
 * table the way a C plugin would, which keeps every type and macro in use. Not a plugin: a static
 * library that nothing links. */
#include "commbench/backend.h"

/* C99 has no static_assert: a negative array size fails to compile. */
#define C99_STATIC_ASSERT(cond, name) typedef char c99_static_assert_##name[(cond) ? 1 : -1]

C99_STATIC_ASSERT(sizeof(cb_backend_api) == CB_STRUCT_SIZE(cb_backend_api, enqueue), api_no_tail);
C99_STATIC_ASSERT(sizeof(cb_host_services) == CB_STRUCT_SIZE(cb_host_services, flags), host_no_tail);
C99_STATIC_ASSERT(CB_HOST_SHARED_DEVICE == 1u, host_flag);
C99_STATIC_ASSERT(CB_HOST_OWN_CPUS == 2u, host_flag_own_cpus);
C99_STATIC_ASSERT(sizeof(cb_option_descriptor) == CB_STRUCT_SIZE(cb_option_descriptor, max), descriptor_no_tail);
C99_STATIC_ASSERT(CB_ABI_MAJOR == 1, abi_major_is_1);
C99_STATIC_ASSERT(CB_BIT(CB_OP_RECV) == 1024u, bit_macro);

static cb_error* c_get_capabilities(const cb_backend* backend, cb_capabilities* out) {
  (void)backend;
  out->ops = CB_BIT(CB_OP_ALLREDUCE) | CB_BIT(CB_OP_BARRIER);
  out->dtypes = CB_BIT(CB_DTYPE_F32);
  out->reduce_dtypes = CB_BIT(CB_DTYPE_F32);
  out->redops = CB_BIT(CB_REDOP_SUM);
  out->mem_types = CB_BIT(CB_MEM_HOST);
  out->flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE;
  return NULL;
}

static const char* const c_modes[] = {"fast", "safe", NULL};
static const cb_option_descriptor c_options[] = {
    {CB_STRUCT_SIZE(cb_option_descriptor, max), "mode", CB_OPTION_CHOICE, "fast", "a choice", c_modes, 0, 0},
    {CB_STRUCT_SIZE(cb_option_descriptor, max), "timeout_ms", CB_OPTION_INT, "1000", "an int", NULL, 1, 60000},
};

const cb_backend_api* abi_c99_check_table(void) {
  static cb_backend_api api;
  api.struct_size = sizeof(cb_backend_api);
  api.abi_major = CB_ABI_MAJOR;
  api.abi_minor = CB_ABI_MINOR;
  api.name = "c99-check";
  api.get_capabilities = c_get_capabilities;
  api.option_descriptors = c_options;
  api.num_option_descriptors = sizeof c_options / sizeof c_options[0];
  return &api;
}
