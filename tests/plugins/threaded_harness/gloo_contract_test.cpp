// The plugin's side of the ABI contract: its table, static capabilities, option validation,
// metadata, and the cases it must refuse (fp8 arithmetic, avg, non-host memory, bad args).
#include <gtest/gtest.h>

#include <cstring>

#include "in_process_host.h"
#include "test_support.h"

namespace commbench::test {
namespace {

const cb_backend_api& api() { return load_plugin(gloo_plugin_path()); }

// init() alone on a one-rank host; returns the status (and finalizes on success).
Status init_with(const Options& options) {
  InProcessHost host(1);
  cb_backend* backend = nullptr;
  Status status = to_status(api(), api().init(&host.services(0, options), &backend));
  if (backend != nullptr) to_status(api(), api().finalize(backend));
  return status;
}

TEST(GlooContract, TableIsCompleteAndVersioned) {
  const cb_backend_api& t = api();
  EXPECT_EQ(t.abi_major, static_cast<uint32_t>(CB_ABI_MAJOR));
  EXPECT_GE(t.struct_size, CB_STRUCT_SIZE(cb_backend_api, group_end));
  EXPECT_STREQ(t.name, "gloo");
  EXPECT_NE(std::string(t.version), "");
  for (const void* fn : {(const void*)t.error_code, (const void*)t.error_message, (const void*)t.error_destroy,
                         (const void*)t.get_capabilities, (const void*)t.init, (const void*)t.finalize,
                         (const void*)t.comm_create, (const void*)t.comm_destroy, (const void*)t.post,
                         (const void*)t.test, (const void*)t.wait, (const void*)t.request_free})
    EXPECT_NE(fn, nullptr);
}

TEST(GlooContract, StaticCapabilitiesBeforeInit) {
  cb_capabilities caps{};
  caps.struct_size = sizeof(caps);
  ASSERT_TRUE(to_status(api(), api().get_capabilities(nullptr, &caps)).ok());
  EXPECT_EQ(caps.ops, (uint64_t{1} << CB_OP_COUNT_V1) - 1);
  EXPECT_EQ(caps.dtypes, (uint64_t{1} << CB_DTYPE_COUNT_V1) - 1);
  EXPECT_EQ(caps.reduce_dtypes, caps.dtypes & ~CB_BIT(CB_DTYPE_F8E4M3) & ~CB_BIT(CB_DTYPE_F8E5M2));
  EXPECT_EQ(caps.redops, CB_BIT(CB_REDOP_SUM) | CB_BIT(CB_REDOP_PROD) | CB_BIT(CB_REDOP_MIN) | CB_BIT(CB_REDOP_MAX));
  EXPECT_EQ(caps.mem_types, CB_BIT(CB_MEM_HOST));
  EXPECT_EQ(caps.flags, CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE | CB_CAP_ASYNC);
}

TEST(GlooContract, CapabilitiesFillOnlyWhatAnOlderCallerHas) {
  cb_capabilities caps;
  std::memset(&caps, 0xAB, sizeof(caps));
  caps.struct_size = CB_STRUCT_SIZE(cb_capabilities, dtypes);
  ASSERT_TRUE(to_status(api(), api().get_capabilities(nullptr, &caps)).ok());
  EXPECT_EQ(caps.struct_size, CB_STRUCT_SIZE(cb_capabilities, dtypes));
  EXPECT_EQ(caps.dtypes, (uint64_t{1} << CB_DTYPE_COUNT_V1) - 1);
  EXPECT_EQ(caps.reduce_dtypes, 0xABABABABABABABABull) << "wrote past the caller's struct";
}

TEST(GlooContract, UnknownOptionFailsInitNamingTheKeyAndTheValidOnes) {
  const Status status = init_with({{"allreduce_algo", "ring"}});
  EXPECT_EQ(status.code, CB_ERR_INVALID_ARGUMENT);
  EXPECT_NE(status.message.find("'allreduce_algo'"), std::string::npos) << status.message;
  for (const char* valid : {"transport", "iface", "hostname", "allreduce_algorithm", "timeout_ms"})
    EXPECT_NE(status.message.find(valid), std::string::npos) << status.message;
}

TEST(GlooContract, BadOptionValuesFailInitNamingTheKey) {
  const std::vector<std::pair<Options, std::string>> cases = {
      {{{"transport", "ibverbs"}}, "transport"},
      {{{"allreduce_algorithm", "tree"}}, "allreduce_algorithm"},
      {{{"timeout_ms", "0"}}, "timeout_ms"},
      {{{"timeout_ms", "10s"}}, "timeout_ms"},
      {{{"hostname", "127.0.0.1"}, {"iface", "lo"}}, "iface"},
      {{{"iface", "no-such-interface0"}}, "no-such-interface0"},
  };
  for (const auto& [options, expected_in_message] : cases) {
    const Status status = init_with(options);
    EXPECT_EQ(status.code, CB_ERR_INVALID_ARGUMENT) << expected_in_message << ": " << status.message;
    EXPECT_NE(status.message.find(expected_in_message), std::string::npos) << status.message;
  }
}

TEST(GlooContract, ValidOptionsAreAccepted) {
  EXPECT_TRUE(init_with({{"transport", "tcp"}, {"iface", "lo"}, {"allreduce_algorithm", "bcube"},
                         {"timeout_ms", "1000"}}).ok());
  EXPECT_TRUE(init_with({{"hostname", "localhost"}}).ok());
}

TEST(GlooContract, MetadataDescribesLibraryAndSettings) {
  const auto failures = run_ranks(gloo_plugin_path(), 2, test_options({{"allreduce_algorithm", "halving_doubling"}}),
                                  [&](RankSession& s) {
    const auto facts = s.metadata();
    const auto expect = [&](const std::string& key, const std::string& value) {
      if (facts.count(key) == 0 || facts.at(key) != value)
        throw std::runtime_error("metadata " + key + " = '" + (facts.count(key) ? facts.at(key) : "<missing>") +
                                 "', expected '" + value + "'");
    };
    expect("gloo_version", "0.5.0");
    expect("transport", "tcp");
    expect("hostname", "127.0.0.1");
    expect("allreduce_algorithm", "halving_doubling");
    expect("timeout_ms", "20000");
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST(GlooContract, UnsupportedCasesAreUnimplementedOnEveryRank) {
  const auto failures = run_ranks(gloo_plugin_path(), 2, test_options(), [&](RankSession& s) {
    std::vector<std::byte> send(64), recv(64);
    const auto expect_unimplemented = [&](cb_op_args args, const std::string& what, const std::string& hint) {
      const Status status = s.run(args);
      if (status.code != CB_ERR_UNIMPLEMENTED || status.message.find(hint) == std::string::npos)
        throw std::runtime_error(what + ": expected UNIMPLEMENTED mentioning '" + hint + "', got " +
                                 std::to_string(status.code) + ": " + status.message);
    };
    for (cb_op op : {CB_OP_ALLREDUCE, CB_OP_REDUCE, CB_OP_REDUCESCATTER}) {
      for (cb_dtype fp8 : {CB_DTYPE_F8E4M3, CB_DTYPE_F8E5M2})
        expect_unimplemented(make_args(op, send.data(), recv.data(), 4, fp8), "fp8 reduction", "fp8");
      expect_unimplemented(make_args(op, send.data(), recv.data(), 4, CB_DTYPE_F32, CB_REDOP_AVG), "avg", "sum");
    }
    cb_op_args pinned = make_args(CB_OP_ALLGATHER, send.data(), recv.data(), 4, CB_DTYPE_UINT8);
    pinned.mem_type = CB_MEM_HOST_PINNED;
    expect_unimplemented(pinned, "host_pinned memory", "host memory only");
    // fp8 data movement, by contrast, works.
    const Status moved = s.run(make_args(CB_OP_ALLGATHER, send.data(), recv.data(), 4, CB_DTYPE_F8E4M3));
    if (!moved.ok()) throw std::runtime_error("fp8 allgather failed: " + moved.message);
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST(GlooContract, MalformedArgumentsAreInvalid) {
  const auto failures = run_ranks(gloo_plugin_path(), 2, test_options(), [&](RankSession& s) {
    std::vector<float> buffer(8);
    const auto expect_invalid = [&](cb_op_args args, const std::string& hint) {
      const Status status = s.run(args);
      if (status.code != CB_ERR_INVALID_ARGUMENT || status.message.find(hint) == std::string::npos)
        throw std::runtime_error("expected INVALID_ARGUMENT mentioning '" + hint + "', got: " + status.message);
    };
    expect_invalid(make_args(CB_OP_BROADCAST, buffer.data(), buffer.data(), 8, CB_DTYPE_F32, CB_REDOP_SUM, 2), "root 2");
    expect_invalid(make_args(CB_OP_ALLREDUCE, buffer.data(), nullptr, 8, CB_DTYPE_F32), "recvbuf is NULL");
    cb_op_args no_size = make_args(CB_OP_BARRIER, nullptr, nullptr, 0, CB_DTYPE_F32);
    no_size.struct_size = 0;
    expect_invalid(no_size, "struct_size");
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

TEST(GlooContract, SingleRankCommunicatorWorks) {
  const auto failures = run_ranks(gloo_plugin_path(), 1, test_options(), [&](RankSession& s) {
    std::vector<int32_t> in = {1, 2, 3}, out(3);
    Status status = s.run(make_args(CB_OP_ALLREDUCE, in.data(), out.data(), 3, CB_DTYPE_INT32));
    if (!status.ok() || out != in) throw std::runtime_error("allreduce on one rank: " + status.message);
    status = s.run(make_args(CB_OP_BARRIER, nullptr, nullptr, 0, CB_DTYPE_INT32));
    if (!status.ok()) throw std::runtime_error("barrier on one rank: " + status.message);
  });
  EXPECT_TRUE(failures.empty()) << join_lines(failures);
}

}  // namespace
}  // namespace commbench::test
