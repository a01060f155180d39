// The parts of the nccl/ncclx plugins that need no GPU: loading an NCCL-API library and resolving
// its symbols (against the local libnccl.so.2), the dtype and reduce-op maps, the options.
#include <gtest/gtest.h>

#include <string>

#include "commbench/sdk/plugin_error.hpp"
#include "nccl_api.h"
#include "nccl_backend.h"
#include "nccl_options.h"
#include "nccl_types.h"

namespace commbench::nccl_backend {
namespace {

TEST(NcclApi, ResolvesEveryRequiredSymbolOfTheLocalLibnccl) {
  const NcclApi a = load_nccl_api(COMMBENCH_NCCL_LIBRARY);
  EXPECT_FALSE(a.linked);
  ASSERT_NE(a.GetVersion, nullptr);
  int v = 0;
  ASSERT_EQ(a.GetVersion(&v), ncclSuccess);  // needs no device
  EXPECT_GE(v, 21400);
  EXPECT_EQ(version_string(v).substr(0, 2), "2.");
  for (const void* f : {(const void*)a.GetUniqueId, (const void*)a.CommInitRankConfig, (const void*)a.AllReduce,
                        (const void*)a.Send, (const void*)a.Recv, (const void*)a.GroupEnd, (const void*)a.CommAbort,
                        (const void*)a.CommGetAsyncError})
    EXPECT_NE(f, nullptr);
  EXPECT_FALSE(a.is_ncclx()) << "stock NCCL has no ncclAllToAllv";
  EXPECT_STREQ(a.GetErrorString(ncclInvalidArgument), a.GetErrorString(ncclInvalidArgument));
}

TEST(NcclApi, AMissingLibraryIsUnavailableWithTheOptionToSet) {
  try {
    load_nccl_api("libnccl_absent_from_this_host.so.2");
    FAIL();
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_UNAVAILABLE);
    EXPECT_NE(std::string(e.what()).find("COMMBENCH_NCCLX_LIBRARY"), std::string::npos) << e.what();
  }
}

// A path written out that names no file is a typo (the run fails), not a host without NCCL
// (which would end "success, with notes").
TEST(NcclApi, ANamedPathThatDoesNotExistIsAnError) {
  try {
    load_nccl_api("/nonexistent/libnccl.so.2");
    FAIL();
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(NcclApi, ALibraryThatIsNotNcclNamesTheMissingSymbol) {
  try {
    load_nccl_api("libm.so.6");
    FAIL();
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("lacks ncclGetVersion"), std::string::npos) << e.what();
  }
}

TEST(NcclApi, VersionStrings) {
  EXPECT_EQ(version_string(22803), "2.28.3");
  EXPECT_EQ(version_string(21903), "2.19.3");
}

TEST(NcclTypes, EveryDtypeMapsFromNccl224AndFp8NotBefore) {
  EXPECT_EQ(nccl_dtype(CB_DTYPE_F32, 22000), ncclFloat32);
  EXPECT_EQ(nccl_dtype(CB_DTYPE_BF16, 22000), ncclBfloat16);
  EXPECT_EQ(nccl_dtype(CB_DTYPE_UINT64, 22000), ncclUint64);
  EXPECT_FALSE(nccl_dtype(CB_DTYPE_F8E4M3, 22300).has_value());
  EXPECT_EQ(static_cast<int>(*nccl_dtype(CB_DTYPE_F8E4M3, 22400)), 10);
  EXPECT_EQ(static_cast<int>(*nccl_dtype(CB_DTYPE_F8E5M2, 22400)), 11);
  EXPECT_EQ(supported_dtypes(22800), (uint64_t{1} << CB_DTYPE_COUNT_V1) - 1);
  EXPECT_EQ(supported_dtypes(22300) & CB_BIT(CB_DTYPE_F8E4M3), 0u);
  EXPECT_EQ(nccl_redop(CB_REDOP_AVG), ncclAvg);
  EXPECT_EQ(nccl_redop(CB_REDOP_MIN), ncclMin);
}

TEST(NcclTypes, Fp8ReductionsNeedComputeCapability9ButFp8MovesEverywhere) {
  const cb_capabilities ampere = nccl_capabilities(22800, 8);
  EXPECT_EQ(ampere.reduce_dtypes & CB_BIT(CB_DTYPE_F8E4M3), 0u);
  EXPECT_EQ(ampere.reduce_dtypes & CB_BIT(CB_DTYPE_F8E5M2), 0u);
  EXPECT_NE(ampere.dtypes & CB_BIT(CB_DTYPE_F8E4M3), 0u) << "allgather of fp8 needs no arithmetic";
  EXPECT_NE(ampere.reduce_dtypes & CB_BIT(CB_DTYPE_BF16), 0u);
  const cb_capabilities hopper = nccl_capabilities(22800, 9);
  EXPECT_NE(hopper.reduce_dtypes & CB_BIT(CB_DTYPE_F8E4M3), 0u);
  EXPECT_NE(nccl_capabilities(22800).reduce_dtypes & CB_BIT(CB_DTYPE_F8E5M2), 0u) << "before init: the static set";
}

TEST(NcclTypes, CapabilitiesAreStreamOrderedCudaWithGroups) {
  const cb_capabilities c = nccl_capabilities(22800);
  EXPECT_EQ(c.mem_types, CB_BIT(CB_MEM_CUDA));
  EXPECT_TRUE(c.flags & CB_CAP_STREAM_ORDERED);
  EXPECT_TRUE(c.flags & CB_CAP_GROUPS);
  EXPECT_EQ(c.ops, (uint64_t{1} << CB_OP_COUNT_V1) - 1);
}

cb_option opt(const char* k, const char* v) { return cb_option{sizeof(cb_option), k, v}; }

TEST(NcclOptions, ParsesConfigFieldsAndRejectsWithTheKey) {
  const cb_option good[] = {opt("blocking", "off"), opt("cga_cluster_size", "4"), opt("min_ctas", "2"),
                            opt("max_ctas", "16"), opt("registration", "on"), opt("net_name", "Socket")};
  const NcclOptions o = parse_nccl_options(good, 6, "nccl");
  EXPECT_EQ(o.blocking, 0);
  EXPECT_EQ(o.cga_cluster_size, 4);
  EXPECT_EQ(o.max_ctas, 16);
  EXPECT_TRUE(o.registration);
  EXPECT_EQ(o.net_name, "Socket");
  const cb_option lib[] = {opt("library", "/opt/ncclx/lib/libnccl.so")};
  EXPECT_EQ(parse_nccl_options(lib, 1, "ncclx").library, "/opt/ncclx/lib/libnccl.so");
  try {
    parse_nccl_options(lib, 1, "nccl");  // only ncclx chooses its library
    FAIL();
  } catch (const sdk::PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown option 'library' for backend nccl"), std::string::npos) << e.what();
  }
  const cb_option bad[] = {opt("min_ctas", "8"), opt("max_ctas", "2")};
  EXPECT_THROW(parse_nccl_options(bad, 2, "nccl"), sdk::PluginError);
  const cb_option word[] = {opt("blocking", "maybe")};
  EXPECT_THROW(parse_nccl_options(word, 1, "nccl"), sdk::PluginError);
}

TEST(NcclOptions, MinCtasAloneGivesADefinedMaxCtasNotBelowIt) {
  const cb_option only_min[] = {opt("min_ctas", "4")};
  const ncclConfig_t c = make_nccl_config(parse_nccl_options(only_min, 1, "nccl"));
  EXPECT_EQ(c.minCTAs, 4);
  EXPECT_NE(c.maxCTAs, NCCL_CONFIG_UNDEF_INT);
  EXPECT_GE(c.maxCTAs, c.minCTAs);
  const cb_option big_min[] = {opt("min_ctas", "100")};
  const ncclConfig_t big = make_nccl_config(parse_nccl_options(big_min, 1, "nccl"));
  EXPECT_GE(big.maxCTAs, 100);
  const cb_option both[] = {opt("min_ctas", "2"), opt("max_ctas", "8")};
  EXPECT_EQ(make_nccl_config(parse_nccl_options(both, 2, "nccl")).maxCTAs, 8);
  const ncclConfig_t none = make_nccl_config(parse_nccl_options(nullptr, 0, "nccl"));
  EXPECT_EQ(none.maxCTAs, NCCL_CONFIG_UNDEF_INT) << "NCCL's own default when nothing is asked";
  EXPECT_EQ(none.minCTAs, NCCL_CONFIG_UNDEF_INT);
  EXPECT_EQ(none.blocking, 1) << "blocking by default, like NCCL and nccl-tests";
}

}  // namespace
}  // namespace commbench::nccl_backend
