#include <gtest/gtest.h>

#include "plugin/catalog_format.h"
#include "test_plugin_helpers.h"

namespace commbench {
namespace {

using test::contains;

PluginListing sample_listing() {
  PluginListing l;
  l.search_path = {{"/opt/plugins", "COMMBENCH_PLUGIN_PATH"}, {"/nonexistent/dir", "install directory"}};
  PluginInfo gloo;
  gloo.name = "gloo";
  gloo.path = "/opt/plugins/libcommbench_backend_gloo.so";
  gloo.version = "0.1.0";
  gloo.description = "Gloo collectives over TCP";
  gloo.abi_major = 1;
  gloo.abi_minor = 0;
  gloo.caps.ops = CB_BIT(CB_OP_ALLREDUCE) | CB_BIT(CB_OP_BARRIER);
  gloo.caps.dtypes = CB_BIT(CB_DTYPE_F32) | CB_BIT(CB_DTYPE_BF16);
  gloo.caps.redops = CB_BIT(CB_REDOP_SUM) | CB_BIT(CB_REDOP_MAX);
  gloo.caps.mem_types = CB_BIT(CB_MEM_HOST);
  gloo.caps.flags = CB_CAP_OUT_OF_PLACE;
  PluginInfo broken;
  broken.name = "nccl";
  broken.path = "/opt/plugins/libcommbench_backend_nccl.so";
  broken.load_error = "cannot load plugin: libnccl.so.2: cannot open shared object file";
  l.plugins = {{"gloo", gloo}, {"nccl", broken}};
  l.shadowed = {{{"gloo", "/usr/lib/libcommbench_backend_gloo.so"}, gloo.path}};
  return l;
}

TEST(PluginListingText, ShowsCapabilitiesByNameAndErrors) {
  std::string text = format_plugin_listing(sample_listing());
  EXPECT_TRUE(contains(text, "gloo 0.1.0 (ABI 1.0)\n  Gloo collectives over TCP\n"));
  EXPECT_TRUE(contains(text, "  ops            allreduce barrier\n"));
  EXPECT_TRUE(contains(text, "  dtypes         bf16 f32\n"));
  EXPECT_TRUE(contains(text, "  reduce dtypes  -\n")) << "an empty set reads '-'";
  EXPECT_TRUE(contains(text, "  reduce ops     sum max\n"));
  EXPECT_TRUE(contains(text, "  memory         host\n"));
  EXPECT_TRUE(contains(text, "  flags          out_of_place\n"));
  EXPECT_TRUE(contains(text, "nccl (cannot be used)\n"));
  EXPECT_TRUE(contains(text, "  error          cannot load plugin: libnccl.so.2"));
  EXPECT_TRUE(contains(text, "/usr/lib/libcommbench_backend_gloo.so  (shadowed by /opt/plugins/"));
  EXPECT_TRUE(contains(text, "  2. /nonexistent/dir  [install directory, missing]\n"));
}

TEST(PluginListingText, SaysWhatToDoWhenNothingIsFound) {
  PluginListing empty;
  EXPECT_TRUE(contains(format_plugin_listing(empty), "COMMBENCH_PLUGIN_PATH"));
}

TEST(PluginListingJson, HasPluginsShadowedAndSearchPath) {
  nlohmann::json j = plugin_listing_json(sample_listing());
  ASSERT_EQ(j["plugins"].size(), 2u);
  EXPECT_EQ(j["plugins"][0]["name"], "gloo");
  EXPECT_EQ(j["plugins"][0]["capabilities"]["redops"], nlohmann::json({"sum", "max"}));
  EXPECT_EQ(j["plugins"][1]["load_error"],
            "cannot load plugin: libnccl.so.2: cannot open shared object file");
  EXPECT_EQ(j["shadowed"][0]["shadowed_by"], "/opt/plugins/libcommbench_backend_gloo.so");
  EXPECT_EQ(j["search_path"][1]["origin"], "install directory");
}

TEST(PluginListingFromCatalog, RescansForShadowedFiles) {
  test::TempDir tmp;
  std::string first = tmp.mkdir("first"), second = tmp.mkdir("second");
  tmp.write("first/libcommbench_backend_gloo.so");
  tmp.write("second/libcommbench_backend_gloo.so");
  PluginCatalog catalog = sample_listing().plugins;
  std::vector<SearchDir> search = {{first, "given"}, {second, "given"}};
  std::string text = format_plugin_listing(catalog, search, /*json=*/false);
  EXPECT_TRUE(contains(text, second + "/libcommbench_backend_gloo.so  (shadowed by " + first));
  nlohmann::json j = nlohmann::json::parse(format_plugin_listing(catalog, search, /*json=*/true));
  EXPECT_EQ(j["shadowed"][0]["path"], second + "/libcommbench_backend_gloo.so");
  EXPECT_EQ(j["plugins"].size(), 2u);
}

}  // namespace
}  // namespace commbench
