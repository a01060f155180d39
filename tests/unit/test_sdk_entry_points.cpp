// The SDK's function table (commbench/sdk/plugin_entry.hpp) for ABI 1.3: `enqueue` is exported
// when the traits have one, NULL otherwise, and the table's struct_size covers it; a 1.2 host's
// services (no `flags`) read as flags 0 in the plugin's copy.
#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "commbench/sdk/host_services.hpp"
#include "commbench/sdk/plugin_entry.hpp"

struct cb_backend {};
struct cb_comm {
  int enqueued = 0;
};
struct cb_request {};

namespace commbench {
namespace {

struct PlainTraits {
  static constexpr const char* name = "entrytest";
  static cb_error* translate(std::string_view what) noexcept { return sdk::error_from_standard_exception(what); }
  static cb_capabilities capabilities(const cb_backend*) { return cb_capabilities{}; }
  static std::unique_ptr<cb_backend> create_backend(const cb_host_services&) { return std::make_unique<cb_backend>(); }
  static void emit_metadata(const cb_backend&, void (*)(void*, const char*, const char*), void*) {}
  static std::unique_ptr<cb_comm> create_communicator(cb_backend&, int32_t) { return std::make_unique<cb_comm>(); }
  static std::unique_ptr<cb_request> post(cb_comm&, const cb_op_args&) { return std::make_unique<cb_request>(); }
  static bool test(cb_request&) { return true; }
  static void wait(cb_request&, int32_t) {}
};
struct EnqueueTraits : PlainTraits {
  static void enqueue(cb_comm& c, const cb_op_args& a) {
    if (a.count == 0) sdk::fail(CB_ERR_INVALID_ARGUMENT, "empty");
    ++c.enqueued;
  }
};

TEST(SdkEntryPoints, EnqueueIsExportedOnlyWhenTheTraitsHaveIt) {
  constexpr cb_backend_api with = sdk::EntryPoints<EnqueueTraits>::table("1", "d");
  constexpr cb_backend_api without = sdk::EntryPoints<PlainTraits>::table("1", "d");
  EXPECT_EQ(with.struct_size, CB_STRUCT_SIZE(cb_backend_api, enqueue));
  EXPECT_EQ(with.abi_minor, 3u);
  ASSERT_NE(with.enqueue, nullptr);
  EXPECT_EQ(without.enqueue, nullptr);
  cb_comm comm;
  cb_op_args a{};
  a.struct_size = CB_STRUCT_SIZE(cb_op_args, tag);
  a.op = CB_OP_ALLREDUCE;
  a.count = 4;
  EXPECT_EQ(with.enqueue(&comm, &a), nullptr);
  EXPECT_EQ(comm.enqueued, 1);
  a.count = 0;
  cb_error* e = with.enqueue(&comm, &a);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(with.error_code(e), CB_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(with.error_message(e)).find("entrytest allreduce"), std::string::npos) << with.error_message(e);
  with.error_destroy(e);
  e = with.enqueue(nullptr, &a);
  ASSERT_NE(e, nullptr);
  with.error_destroy(e);
}

TEST(SdkEntryPoints, AnOlderHostsServicesReadAsNoFlags) {
  cb_host_services given{};
  given.struct_size = CB_STRUCT_SIZE(cb_host_services, kv_get);  // a 1.2 host
  given.world_size = 1;
  given.bootstrap_allgather = [](void*, const void*, size_t, void*, int32_t) { return CB_OK; };
  given.bootstrap_broadcast = [](void*, void*, size_t, int32_t, int32_t) { return CB_OK; };
  given.bootstrap_barrier = [](void*, int32_t) { return CB_OK; };
  given.kv_set = [](void*, const char*, const void*, size_t, int32_t) { return CB_OK; };
  given.kv_get = [](void*, const char*, void*, size_t, size_t*, int32_t) { return CB_OK; };
  given.flags = CB_HOST_SHARED_DEVICE;  // beyond the struct_size it claims: must not be read
  EXPECT_EQ(sdk::copy_host_services(given, "x").flags, 0u);
  given.struct_size = CB_STRUCT_SIZE(cb_host_services, flags);
  EXPECT_EQ(sdk::copy_host_services(given, "x").flags, CB_HOST_SHARED_DEVICE);
}

}  // namespace
}  // namespace commbench
