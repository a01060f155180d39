#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "plugin/loader.h"
#include "test_plugin_helpers.h"

namespace commbench {
namespace {

using test::TempDir;
using test::contains;

// ---- a fake plugin table, to test the checks without building libraries
struct FakeError {
  cb_status code;
  std::string text;
  int* destroyed;
};
cb_status fake_code(const cb_error* e) { return reinterpret_cast<const FakeError*>(e)->code; }
const char* fake_message(const cb_error* e) { return reinterpret_cast<const FakeError*>(e)->text.c_str(); }
void fake_destroy(cb_error* e) {
  auto* f = reinterpret_cast<FakeError*>(e);
  ++*f->destroyed;
  delete f;
}
cb_error* fake_caps(const cb_backend*, cb_capabilities* out) {
  if (out->struct_size < CB_STRUCT_SIZE(cb_capabilities, flags)) return nullptr;
  out->ops = CB_BIT(CB_OP_BARRIER);
  out->struct_size = 8;  // misbehaving: query_capabilities must restore it
  return nullptr;
}
cb_error* fake_init(const cb_host_services*, cb_backend**) { return nullptr; }
cb_error* fake_backend_fn(cb_backend*) { return nullptr; }
cb_error* fake_comm_create(cb_backend*, int32_t, cb_comm**) { return nullptr; }
cb_error* fake_comm_fn(cb_comm*) { return nullptr; }
cb_error* fake_post(cb_comm*, const cb_op_args*, cb_request**) { return nullptr; }
cb_error* fake_test(cb_request*, int32_t*) { return nullptr; }
cb_error* fake_wait(cb_request*, int32_t) { return nullptr; }
void fake_free(cb_request*) {}

cb_backend_api complete_table() {
  cb_backend_api a{};
  a.struct_size = CB_STRUCT_SIZE(cb_backend_api, group_end);
  a.abi_major = CB_ABI_MAJOR;
  a.abi_minor = CB_ABI_MINOR;
  a.name = "fake";
  a.error_code = fake_code;
  a.error_message = fake_message;
  a.error_destroy = fake_destroy;
  a.get_capabilities = fake_caps;
  a.init = fake_init;
  a.finalize = fake_backend_fn;
  a.comm_create = fake_comm_create;
  a.comm_destroy = fake_comm_fn;
  a.post = fake_post;
  a.test = fake_test;
  a.wait = fake_wait;
  a.request_free = fake_free;
  a.group_start = fake_comm_fn;
  a.group_end = fake_comm_fn;
  return a;
}

std::string load_error_of(const std::string& path) {
  try {
    load_plugin(path);
  } catch (const PluginLoadError& e) {
    return e.what();
  }
  return "(loaded)";
}

std::string adopt_error_of(const cb_backend_api* table) {
  try {
    adopt_api_table(table, "/p/libcommbench_backend_fake.so");
  } catch (const PluginLoadError& e) {
    return e.what();
  }
  return "(adopted)";
}

TEST(AdoptApiTable, ACompleteTableIsCopied) {
  cb_backend_api t = complete_table();
  cb_backend_api api = adopt_api_table(&t, "p");
  EXPECT_EQ(std::memcmp(&api, &t, sizeof t), 0);
}

TEST(AdoptApiTable, AnotherMajorIsRejectedWithWhatToDo) {
  cb_backend_api t = complete_table();
  t.abi_major = 2;
  EXPECT_EQ(adopt_error_of(&t),
            "plugin /p/libcommbench_backend_fake.so was built for ABI 2, this commbench speaks ABI 1: "
            "rebuild it against commbench's backend.h");
}

TEST(AdoptApiTable, AnOlderShorterTableReadsAsNullOptionalFunctions) {
  cb_backend_api t = complete_table();
  t.struct_size = CB_STRUCT_SIZE(cb_backend_api, request_free);  // as if group_* came later
  cb_backend_api api = adopt_api_table(&t, "p");
  EXPECT_EQ(api.group_start, nullptr) << "beyond the plugin's struct_size: must not be read";
  EXPECT_EQ(api.group_end, nullptr);
  EXPECT_EQ(api.request_free, fake_free);
  EXPECT_EQ(api.struct_size, t.struct_size) << "keeps the size the plugin reported";
}

cb_error* fake_complete(cb_comm*, const cb_op_args*, int32_t) { return nullptr; }

// complete (1.1) is read from a 1.1 table and is NULL for a 1.0 one, whatever lies beyond it.
TEST(AdoptApiTable, CompleteIsReadOnlyFromTablesThatHaveIt) {
  cb_backend_api t = complete_table();
  t.complete = fake_complete;
  t.struct_size = CB_STRUCT_SIZE(cb_backend_api, complete);
  EXPECT_EQ(adopt_api_table(&t, "p").complete, fake_complete);
  t.struct_size = CB_STRUCT_SIZE(cb_backend_api, group_end);  // a 1.0 plugin
  t.abi_minor = 0;
  EXPECT_EQ(adopt_api_table(&t, "p").complete, nullptr);
}

TEST(AdoptApiTable, ANewerLongerTableIsAccepted) {
  struct NewerTable {  // a plugin built against a later minor with one more function
    cb_backend_api v1_0;
    void (*appended)(void);
  } newer{complete_table(), nullptr};
  newer.v1_0.struct_size = sizeof(NewerTable);
  newer.v1_0.abi_minor = CB_ABI_MINOR + 1;
  cb_backend_api api = adopt_api_table(&newer.v1_0, "p");
  EXPECT_EQ(api.group_end, fake_comm_fn);
  EXPECT_EQ(api.abi_minor, CB_ABI_MINOR + 1u);
}

TEST(AdoptApiTable, MissingMandatoryFunctionsAreAllNamed) {
  cb_backend_api t = complete_table();
  t.wait = nullptr;
  t.error_destroy = nullptr;
  t.comm_abort = nullptr;  // optional: not named
  std::string error = adopt_error_of(&t);
  EXPECT_TRUE(contains(error, "mandatory function(s) error_destroy, wait "));
  EXPECT_FALSE(contains(error, "comm_abort"));
}

TEST(AdoptApiTable, TooShortForTheMandatoryFunctionsIsRejected) {
  cb_backend_api t = complete_table();
  t.struct_size = CB_STRUCT_SIZE(cb_backend_api, test);  // wait and request_free fall outside
  EXPECT_TRUE(contains(adopt_error_of(&t), "mandatory function(s) wait, request_free"));
}

TEST(AdoptApiTable, BrokenHeadsAreRejected) {
  EXPECT_TRUE(contains(adopt_error_of(nullptr), "returned NULL"));
  cb_backend_api t = complete_table();
  t.struct_size = 8;
  EXPECT_TRUE(contains(adopt_error_of(&t), "struct_size 8"));
  t = complete_table();
  t.name = "";
  EXPECT_TRUE(contains(adopt_error_of(&t), "has no name"));
}

TEST(CheckPluginError, ThrowsWithCodeAndMessageAndFreesTheError) {
  cb_backend_api api = complete_table();
  int destroyed = 0;
  auto* error = reinterpret_cast<cb_error*>(new FakeError{CB_ERR_TIMEOUT, "peer 3 silent", &destroyed});
  try {
    check(api, error, "comm_create");
    FAIL() << "no exception";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.status(), CB_ERR_TIMEOUT);
    EXPECT_EQ(e.operation(), "comm_create");
    EXPECT_EQ(e.plugin_message(), "peer 3 silent");
    EXPECT_STREQ(e.what(), "backend 'fake': comm_create failed (timeout): peer 3 silent");
    EXPECT_FALSE(e.skips_case());
  }
  EXPECT_EQ(destroyed, 1);
  EXPECT_NO_THROW(check(api, nullptr, "post"));
}

TEST(CheckPluginError, AnErrorClaimingOkIsStillAFailure) {
  cb_backend_api api = complete_table();
  int destroyed = 0;
  auto* error = reinterpret_cast<cb_error*>(new FakeError{CB_OK, "", &destroyed});
  try {
    check(api, error, "post");
    FAIL() << "no exception";
  } catch (const PluginError& e) {
    EXPECT_EQ(e.status(), CB_ERR_INTERNAL);
    // Said, as an unknown code is (a probe: CB_OK was recorded as internal without a word).
    EXPECT_EQ(e.plugin_message(), "(the plugin gave no message) (the plugin returned an error whose status is CB_OK, "
                                  "which no error may have: taken as internal)");
  }
  EXPECT_EQ(destroyed, 1);
}

TEST(CheckPluginError, StatusNamesCoverUnknownCodes) {
  EXPECT_EQ(status_name(CB_ERR_UNAVAILABLE), "unavailable");
  EXPECT_EQ(status_name(static_cast<cb_status>(42)), "status 42");
}

TEST(QueryCapabilities, PassesThisBuildsStructSize) {
  cb_backend_api api = complete_table();
  cb_capabilities caps = query_capabilities(api, nullptr);
  EXPECT_EQ(caps.ops, CB_BIT(CB_OP_BARRIER)) << "fake_caps fills only when struct_size is complete";
  EXPECT_EQ(caps.struct_size, CB_STRUCT_SIZE(cb_capabilities, flags));
  EXPECT_EQ(caps.dtypes, 0u);
}

// ---- real files
TEST(LoadPlugin, MissingFile) {
  EXPECT_TRUE(contains(load_error_of("/nonexistent/libcommbench_backend_x.so"), "does not exist"));
}

TEST(LoadPlugin, AFileThatIsNotALibraryReportsTheLoaderError) {
  TempDir tmp;
  std::string path = tmp.write("libcommbench_backend_text.so", std::string(4096, 'x'));
  std::string error = load_error_of(path);
  EXPECT_TRUE(contains(error, "cannot load plugin " + path));
  EXPECT_TRUE(contains(error, "invalid ELF header")) << "dlerror()'s text must reach the user";
  EXPECT_TRUE(contains(error, "remove it from the plugin directory"));
}

TEST(LoadPlugin, ALibraryWithoutTheEntrySymbolIsNotAPlugin) {
  Dl_info info{};  // find libm wherever this system keeps it
  ASSERT_NE(::dladdr(reinterpret_cast<void*>(static_cast<double (*)(double)>(&::cos)), &info), 0);
  std::string error = load_error_of(info.dli_fname);
  EXPECT_TRUE(contains(error, "is not a commbench ABI 1 plugin"));
  EXPECT_TRUE(contains(error, CB_ENTRY_SYMBOL));
}

// A probe: a plugin planted in a folder every user can write ran its constructor as root (the
// listing then said it was not a plugin). Refused before dlopen now, unless its owner is trusted.
TEST(LoadPlugin, APluginOthersCouldHaveWrittenIsRefusedBeforeItIsLoaded) {
  COMMBENCH_REQUIRE_TEST_PLUGINS();
  const std::filesystem::path original = std::string(test::test_plugin_dir()) + "/libcommbench_backend_crash.so";
  TempDir tmp;
  const auto place = [&](const std::string& folder, std::filesystem::perms folder_mode) {
    const auto dir = std::filesystem::path(tmp.path()) / folder;
    std::filesystem::create_directories(dir);
    const auto file = dir / "libcommbench_backend_crash.so";
    std::filesystem::copy_file(original, file, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(dir, folder_mode);
    return file.string();
  };
  using P = std::filesystem::perms;
  const std::string open_folder = place("open", P::all);
  EXPECT_TRUE(contains(load_error_of(open_folder), "can be written by every user (mode 0777, no sticky bit)"))
      << load_error_of(open_folder);
  const std::string open_file = place("private", P::owner_all);
  std::filesystem::permissions(open_file, P::owner_read | P::owner_write | P::others_write | P::others_read);
  EXPECT_TRUE(contains(load_error_of(open_file), "can be written by every user (mode 0606)")) << load_error_of(open_file);
  // A sticky folder like /tmp: one's own plugin loads; one someone else put there does not.
  const std::string sticky = place("sticky", P::all | P::sticky_bit);
  EXPECT_EQ(load_plugin(sticky).name(), "crash");
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(sticky.c_str(), 65534, 65534), 0);
    EXPECT_TRUE(contains(load_error_of(sticky), "it belongs to uid 65534, not to you, root or commbench's owner"))
        << load_error_of(sticky);
    // A second probe: a folder of the attacker's own (0755) inside the sticky one, and a link to
    // its plugin from a folder of ours, passed when only the file and its folder were looked at.
    const std::string theirs = place("sticky/theirs", P::owner_all | P::group_read | P::group_exec |
                                                          P::others_read | P::others_exec);
    const auto dir = std::filesystem::path(theirs).parent_path();
    ASSERT_EQ(::chown(dir.c_str(), 65534, 65534), 0);
    EXPECT_TRUE(contains(load_error_of(theirs), "the folder " + dir.string() + " above it belongs to uid 65534"))
        << load_error_of(theirs);
    const auto mine = std::filesystem::path(tmp.path()) / "mine";
    std::filesystem::create_directories(mine);
    std::filesystem::create_symlink(theirs, mine / "libcommbench_backend_crash.so");
    const std::string via_link = load_error_of((mine / "libcommbench_backend_crash.so").string());
    EXPECT_TRUE(contains(via_link, "leads to " + theirs)) << via_link;
    EXPECT_TRUE(contains(via_link, "belongs to uid 65534")) << via_link;
  }
  // A folder of ours whose parent every user can write (no sticky bit): anyone could swap it.
  const std::string under_open = place("open2/sub", P::owner_all);
  std::filesystem::permissions(std::filesystem::path(tmp.path()) / "open2", P::all);
  EXPECT_TRUE(contains(load_error_of(under_open), "open2 above it can be written by every user"))
      << load_error_of(under_open);
  EXPECT_FALSE(unsafe_plugin_file(original.string())) << "the build's own plugins";
}

TEST(LoadPlugin, LoadsTheCrashTestPlugin) {
  COMMBENCH_REQUIRE_TEST_PLUGINS();
  std::string path = std::string(test::test_plugin_dir()) + "/libcommbench_backend_crash.so";
  LoadedPlugin first = load_plugin(path);
  EXPECT_EQ(first.name(), "crash");
  EXPECT_EQ(first.path, path);
  EXPECT_EQ(first.api.abi_major, 1u);
  cb_capabilities caps = query_capabilities(first.api, nullptr);
  EXPECT_EQ(caps.ops, CB_BIT(CB_OP_ALLREDUCE) | CB_BIT(CB_OP_BARRIER));
  // Loading again finds the library still mapped (it is never unloaded): the same table.
  LoadedPlugin second = load_plugin(path);
  EXPECT_EQ(second.api.post, first.api.post);
}

}  // namespace
}  // namespace commbench
