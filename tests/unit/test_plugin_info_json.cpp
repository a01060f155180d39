#include <gtest/gtest.h>

#include "plugin/capability_names.h"
#include "plugin/plugin_info.h"

namespace commbench {
namespace {

PluginInfo sample() {
  PluginInfo p;
  p.name = "gloo";
  p.path = "/opt/lib/libcommbench_backend_gloo.so";
  p.version = "0.3.1";
  p.description = "Gloo over TCP";
  p.abi_major = 1;
  p.abi_minor = 2;
  p.caps.struct_size = kCapabilitiesStructSize;
  p.caps.ops = CB_BIT(CB_OP_ALLREDUCE) | CB_BIT(CB_OP_RECV) | CB_BIT(40);  // 40: a future op
  p.caps.dtypes = CB_BIT(CB_DTYPE_F8E5M2) | CB_BIT(CB_DTYPE_INT8);
  p.caps.reduce_dtypes = CB_BIT(CB_DTYPE_F32);
  p.caps.redops = CB_BIT(CB_REDOP_AVG);
  p.caps.mem_types = CB_BIT(CB_MEM_HOST) | CB_BIT(CB_MEM_CUDA);
  p.caps.flags = CB_CAP_IN_PLACE | CB_CAP_ASYNC;
  return p;
}

void expect_same(const PluginInfo& a, const PluginInfo& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.path, b.path);
  EXPECT_EQ(a.version, b.version);
  EXPECT_EQ(a.description, b.description);
  EXPECT_EQ(a.abi_major, b.abi_major);
  EXPECT_EQ(a.abi_minor, b.abi_minor);
  EXPECT_EQ(a.load_error, b.load_error);
  EXPECT_EQ(a.caps.ops, b.caps.ops);
  EXPECT_EQ(a.caps.dtypes, b.caps.dtypes);
  EXPECT_EQ(a.caps.reduce_dtypes, b.caps.reduce_dtypes);
  EXPECT_EQ(a.caps.redops, b.caps.redops);
  EXPECT_EQ(a.caps.mem_types, b.caps.mem_types);
  EXPECT_EQ(a.caps.flags, b.caps.flags);
  EXPECT_EQ(a.caps.struct_size, b.caps.struct_size);
}

TEST(PluginInfoJson, RoundTripsEveryField) {
  PluginInfo p = sample();
  expect_same(plugin_info_from_json(to_json(p)), p);
  p.load_error = "cannot load: undefined symbol ncclFoo";
  expect_same(plugin_info_from_json(to_json(p)), p);
}

TEST(PluginInfoJson, RoundTripsThroughText) {
  PluginInfo p = sample();
  expect_same(plugin_info_from_json(nlohmann::json::parse(to_json(p).dump())), p);
}

TEST(PluginInfoJson, CapabilitiesAreWrittenByName) {
  nlohmann::json j = to_json(sample());
  EXPECT_EQ(j["capabilities"]["ops"], nlohmann::json({"allreduce", "recv", "bit40"}));
  EXPECT_EQ(j["capabilities"]["dtypes"], nlohmann::json({"int8", "f8e5m2"}));
  EXPECT_EQ(j["capabilities"]["redops"], nlohmann::json({"avg"}));
  EXPECT_EQ(j["capabilities"]["mem_types"], nlohmann::json({"host", "cuda"}));
  EXPECT_EQ(j["capabilities"]["flags"], nlohmann::json({"in_place", "async"}));
  EXPECT_FALSE(j.contains("load_error")) << "only a failed plugin has one";
}

TEST(PluginInfoJson, AFailedProbeNeedsOnlyTheError) {
  PluginInfo p = plugin_info_from_json({{"load_error", "no such file"}});
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.load_error, "no such file");
  EXPECT_EQ(p.caps.ops, 0u);
  EXPECT_EQ(p.abi_major, 0u);
}

TEST(PluginInfoJson, UnknownCapabilityNameIsAnError) {
  nlohmann::json j = to_json(sample());
  j["capabilities"]["dtypes"] = {"f32", "complex128"};
  EXPECT_THROW(plugin_info_from_json(j), std::invalid_argument);
}

TEST(CapabilityNames, EveryDefinedBitHasAName) {
  EXPECT_EQ(capability_names(CapabilitySet::Ops, CB_BIT(CB_OP_COUNT_V1) - 1).size(),
            static_cast<size_t>(CB_OP_COUNT_V1));
  for (auto name : capability_names(CapabilitySet::Ops, CB_BIT(CB_OP_COUNT_V1) - 1))
    EXPECT_NE(name.rfind("bit", 0), 0u) << name;
  for (auto name : capability_names(CapabilitySet::Dtypes, CB_BIT(CB_DTYPE_COUNT_V1) - 1))
    EXPECT_NE(name.rfind("bit", 0), 0u) << name;
  for (auto name : capability_names(CapabilitySet::Flags, 0x3f)) EXPECT_NE(name.rfind("bit", 0), 0u) << name;
  EXPECT_EQ(capability_names(CapabilitySet::Flags, CB_CAP_GROUPS | CB_BIT(63)),
            (std::vector<std::string>{"groups", "bit63"}));
}

TEST(CapabilityNames, MaskIsTheInverseOfNames) {
  for (uint64_t mask : {uint64_t{0}, ~uint64_t{0}, uint64_t{0x5a5a}, CB_BIT(11) | CB_BIT(2)}) {
    for (auto set : {CapabilitySet::Ops, CapabilitySet::Dtypes, CapabilitySet::Redops,
                     CapabilitySet::MemTypes, CapabilitySet::Flags})
      EXPECT_EQ(capability_mask(set, capability_names(set, mask)), mask);
  }
  EXPECT_THROW(capability_mask(CapabilitySet::Flags, {"bit64"}), std::invalid_argument);
  EXPECT_THROW(capability_mask(CapabilitySet::Redops, {"sum", "median"}), std::invalid_argument);
}

}  // namespace
}  // namespace commbench
