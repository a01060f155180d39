// Issue 28 §19: enum values the SDK does not know (a newer host's op 63, dtype 99, reduce op 42,
// memory type 7) are range-checked as integers before anything loads them as enums. This binary
// is built with UBSan (-fsanitize=undefined, no recovery): before the fix, the first post below
// died with "load of value 63, which is not a valid value for type 'cb_op'".
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "commbench/sdk/op_args.hpp"
#include "commbench/sdk/plugin_entry.hpp"

struct cb_backend {
  int unused = 0;
};
struct cb_comm {
  int rank = 0;
};
struct cb_request {
  cb_op op = CB_OP_BARRIER;
};

namespace {

using namespace commbench;

cb_capabilities every_capability() {
  cb_capabilities c{};
  c.struct_size = sizeof(c);
  c.ops = sdk::all_bits(CB_OP_COUNT_V1);
  c.dtypes = c.reduce_dtypes = sdk::all_bits(CB_DTYPE_COUNT_V1);
  c.redops = sdk::all_bits(CB_REDOP_COUNT_V1);
  c.mem_types = CB_BIT(CB_MEM_HOST);
  c.flags = CB_CAP_IN_PLACE | CB_CAP_OUT_OF_PLACE;
  return c;
}

struct Traits {
  static constexpr const char* name = "ubsan";
  static cb_error* translate(std::string_view what) noexcept { return sdk::error_from_standard_exception(what); }
  static cb_capabilities capabilities(const cb_backend*) { return every_capability(); }
  static std::unique_ptr<cb_backend> create_backend(const cb_host_services&) { return std::make_unique<cb_backend>(); }
  static void emit_metadata(const cb_backend&, void (*)(void*, const char*, const char*), void*) {}
  static std::unique_ptr<cb_comm> create_communicator(cb_backend&, int32_t) { return std::make_unique<cb_comm>(); }
  static std::unique_ptr<cb_request> post(cb_comm& comm, const cb_op_args& given) {
    const cb_op_args a = sdk::checked_op_args(given, comm.rank, 2, every_capability());
    auto r = std::make_unique<cb_request>();
    r->op = a.op;  // every enum of `a` is a known value now: reading it is defined
    return r;
  }
  static bool test(cb_request&) { return true; }
  static void wait(cb_request&, int32_t) {}
  static void* allocate(cb_comm&, cb_mem mem, size_t bytes) { return mem == CB_MEM_HOST ? std::malloc(bytes) : nullptr; }
  static void release(cb_comm&, cb_mem, void* p) { std::free(p); }
};

using Entry = sdk::EntryPoints<Traits>;

// The host's struct with raw integers where a newer host puts values this SDK does not know.
cb_op_args raw_args(int32_t op, int32_t dtype, int32_t redop, int32_t mem, void* buffer) {
  cb_op_args a{};
  a.struct_size = sizeof(a);
  std::memcpy(&a.op, &op, sizeof op);
  std::memcpy(&a.dtype, &dtype, sizeof dtype);
  std::memcpy(&a.redop, &redop, sizeof redop);
  std::memcpy(&a.mem_type, &mem, sizeof mem);
  a.sendbuf = a.recvbuf = buffer;
  a.count = 1;
  return a;
}

// The status and message of posting `a`, as the host reads them.
std::pair<cb_status, std::string> post(const cb_op_args& a) {
  cb_comm comm;
  cb_request* request = nullptr;
  cb_error* e = Entry::post(&comm, &a, &request);
  if (e == nullptr) {
    Entry::request_free(request);
    return {CB_OK, ""};
  }
  std::pair<cb_status, std::string> out{Entry::error_code(e), Entry::error_message(e)};
  Entry::error_destroy(e);
  return out;
}

TEST(SdkEnumRanges, ValuesFromANewerHostAreRefusedAsUnimplementedNotLoaded) {
  double buffer[2] = {0, 0};
  auto [status, message] = post(raw_args(63, CB_DTYPE_F32, CB_REDOP_SUM, CB_MEM_HOST, buffer));
  EXPECT_EQ(status, CB_ERR_UNIMPLEMENTED) << message;
  EXPECT_NE(message.find("op 63"), std::string::npos) << message;
  std::tie(status, message) = post(raw_args(CB_OP_ALLREDUCE, 99, CB_REDOP_SUM, CB_MEM_HOST, buffer));
  EXPECT_EQ(status, CB_ERR_UNIMPLEMENTED) << message;
  EXPECT_NE(message.find("dtype 99"), std::string::npos) << message;
  std::tie(status, message) = post(raw_args(CB_OP_ALLREDUCE, CB_DTYPE_F32, 42, CB_MEM_HOST, buffer));
  EXPECT_EQ(status, CB_ERR_UNIMPLEMENTED) << message;
  EXPECT_NE(message.find("reduce op 42"), std::string::npos) << message;
  std::tie(status, message) = post(raw_args(CB_OP_ALLREDUCE, CB_DTYPE_F32, CB_REDOP_SUM, 7, buffer));
  EXPECT_EQ(status, CB_ERR_UNIMPLEMENTED) << message;
  EXPECT_NE(message.find("memory type 7"), std::string::npos) << message;
}

TEST(SdkEnumRanges, UnknownValuesInFieldsAnOpDoesNotUseAreIgnored) {
  double buffer[2] = {0, 0};
  // A barrier has no dtype, a broadcast no reduce op: what a host leaves there does not matter.
  EXPECT_EQ(post(raw_args(CB_OP_BARRIER, 99, 42, CB_MEM_HOST, nullptr)).first, CB_OK);
  EXPECT_EQ(post(raw_args(CB_OP_BROADCAST, CB_DTYPE_F32, 42, CB_MEM_HOST, buffer)).first, CB_OK);
  EXPECT_EQ(post(raw_args(CB_OP_ALLREDUCE, CB_DTYPE_F32, CB_REDOP_SUM, CB_MEM_HOST, buffer)).first, CB_OK);
}

TEST(SdkEnumRanges, RequireAdvertisedAloneReadsRawValuesToo) {
  const cb_op_args a = raw_args(63, 99, 42, 7, nullptr);
  try {
    sdk::require_advertised(a, every_capability(), 0);
    FAIL() << "op 63 was advertised";
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_UNIMPLEMENTED);
    EXPECT_NE(std::string(e.what()).find("op 63"), std::string::npos) << e.what();
  }
}

TEST(SdkEnumRanges, AMemoryTypeFromANewerHostIsRefusedByMemAlloc) {
  cb_comm comm;
  void* p = nullptr;
  const int32_t raw = 7;
  cb_mem mem;
  std::memcpy(&mem, &raw, sizeof raw);
  cb_error* e = Entry::mem_alloc(&comm, mem, 64, &p);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(Entry::error_code(e), CB_ERR_UNIMPLEMENTED);
  EXPECT_NE(std::string(Entry::error_message(e)).find("memory type 7"), std::string::npos);
  Entry::error_destroy(e);
  e = Entry::mem_alloc(&comm, CB_MEM_HOST, 64, &p);
  EXPECT_EQ(e, nullptr);
  EXPECT_EQ(Entry::mem_free(&comm, CB_MEM_HOST, p), nullptr);
}

}  // namespace

// The check that count × dtype size × world size fits in size_t, at its exact boundary (post
// uses a world of 2): f64 × 2 ranks is 16 bytes per element.
TEST(SdkOpArgs, ACountWhoseBuffersOverflowTheAddressSpaceIsRefusedAtTheExactBoundary) {
  double buffer[2] = {0, 0};
  cb_op_args a = raw_args(CB_OP_ALLGATHER, CB_DTYPE_F64, CB_REDOP_SUM, CB_MEM_HOST, buffer);
  a.count = SIZE_MAX / 16;  // 16 × count <= SIZE_MAX: accepted (post touches no buffer)
  EXPECT_EQ(post(a).first, CB_OK);
  for (size_t count : {SIZE_MAX / 16 + 1, SIZE_MAX / 8 + 1, SIZE_MAX}) {
    a.count = count;
    auto [status, message] = post(a);
    EXPECT_EQ(status, CB_ERR_INVALID_ARGUMENT) << count;
    EXPECT_NE(message.find("overflows the address space"), std::string::npos) << message;
  }
}

// A newer host's longer struct is read up to the fields this header knows; one shorter than
// ABI 1.0's is refused, not read.
TEST(SdkOpArgs, ANewerHostsLongerStructIsReadAndAShortOneRefused) {
  double buffer[2] = {0, 0};
  struct Newer {
    cb_op_args known;
    uint64_t added[4];
  } newer{};
  newer.known = raw_args(CB_OP_SEND, CB_DTYPE_F32, CB_REDOP_SUM, CB_MEM_HOST, buffer);
  newer.known.peer = 1;
  newer.known.tag = 77;
  newer.known.struct_size = sizeof(Newer);
  for (uint64_t& v : newer.added) v = ~uint64_t{0};
  const cb_op_args a = sdk::read_op_args(newer.known);
  EXPECT_EQ(a.tag, 77u);
  EXPECT_EQ(a.peer, 1);
  EXPECT_EQ(a.sendbuf, buffer);
  newer.known.struct_size = offsetof(cb_op_args, tag);  // ends before `tag`
  try {
    sdk::read_op_args(newer.known);
    FAIL() << "a struct without tag was read";
  } catch (const sdk::PluginError& e) {
    EXPECT_EQ(e.code(), CB_ERR_INVALID_ARGUMENT);
  }
}

// sdk::CheckedArgsCache: each distinct struct is checked once, the answer is the check's own,
// and a struct the check refuses is refused every time.
TEST(SdkOpArgs, TheCacheChecksEachDistinctStructOnceAndAnswersAsTheCheckDid) {
  double buffer[2] = {0, 0};
  cb_op_args send = raw_args(CB_OP_SEND, CB_DTYPE_F32, CB_REDOP_SUM, CB_MEM_HOST, buffer);
  send.peer = 1;
  cb_op_args recv = send;
  recv.op = CB_OP_RECV;
  int checks = 0;
  auto check = [&](const cb_op_args& g) {
    ++checks;
    return sdk::checked_op_args(g, 0, 2, every_capability());
  };
  sdk::CheckedArgsCache<2> cache;
  for (int i = 0; i < 10; ++i) {  // a ping-pong rank: one send, one receive, over and over
    EXPECT_EQ(cache.get(send, check).op, CB_OP_SEND);
    EXPECT_EQ(cache.get(recv, check).op, CB_OP_RECV);
  }
  EXPECT_EQ(checks, 2);
  const cb_op_args direct = sdk::checked_op_args(recv, 0, 2, every_capability());
  const cb_op_args cached = cache.get(recv, check);
  EXPECT_EQ(cached.op, direct.op);  // the check's own result, field by field
  EXPECT_EQ(cached.peer, direct.peer);
  EXPECT_EQ(cached.count, direct.count);
  EXPECT_EQ(cached.dtype, direct.dtype);
  EXPECT_EQ(cached.redop, direct.redop);  // read_op_args sets an unused reduce op to 0
  EXPECT_EQ(cached.sendbuf, direct.sendbuf);
  EXPECT_EQ(cached.recvbuf, direct.recvbuf);
  EXPECT_EQ(cached.tag, direct.tag);
  cb_op_args other = send;
  other.tag = 9;  // one field differs: checked again
  EXPECT_EQ(cache.get(other, check).tag, 9u);
  EXPECT_EQ(checks, 3);
  cache.get(send, check);  // the oldest entry (send) made room for `other`: checked again
  EXPECT_EQ(checks, 4);
}

TEST(SdkOpArgs, TheCacheNeverRemembersAStructTheCheckRefused) {
  double buffer[2] = {0, 0};
  cb_op_args send = raw_args(CB_OP_SEND, CB_DTYPE_F32, CB_REDOP_SUM, CB_MEM_HOST, buffer);
  send.peer = 1;
  cb_op_args recv = send;
  recv.op = CB_OP_RECV;
  cb_op_args bad = send;
  bad.peer = 5;  // not a rank of a 2-rank world
  cb_op_args short_struct = send;
  short_struct.struct_size = offsetof(cb_op_args, tag);
  int checks = 0;
  auto check = [&](const cb_op_args& g) {
    ++checks;
    return sdk::checked_op_args(g, 0, 2, every_capability());
  };
  sdk::CheckedArgsCache<2> cache;
  cache.get(send, check);  // both entries hold accepted structs
  cache.get(recv, check);
  for (int i = 0; i < 3; ++i) {
    EXPECT_THROW(cache.get(bad, check), sdk::PluginError);
    EXPECT_THROW(cache.get(short_struct, check), sdk::PluginError);
  }
  EXPECT_EQ(checks, 8) << "every refused struct is checked again";
  EXPECT_EQ(cache.get(send, check).op, CB_OP_SEND);
  EXPECT_EQ(cache.get(recv, check).op, CB_OP_RECV);
  EXPECT_EQ(checks, 8) << "the refusals displaced neither accepted struct";
}

// The cache's key is every byte read_op_args reads (ABI 1.0's struct, up to and including `tag`),
// compared in overlapping 16-byte pieces: a struct that differs from a remembered one in any one
// of those bytes is checked again, and a difference past the key (the padding after `tag`) is not
// one. The check here accepts anything, so that every byte can be changed.
TEST(SdkOpArgs, TheCacheTellsApartStructsThatDifferInAnyOneByteOfTheKey) {
  double buffer[2] = {0, 0};
  cb_op_args base = raw_args(CB_OP_SEND, CB_DTYPE_F32, CB_REDOP_SUM, CB_MEM_HOST, buffer);
  base.peer = 1;
  int checks = 0;
  auto accept = [&](const cb_op_args& g) {
    ++checks;
    return g;
  };
  for (size_t at = 0; at < sdk::kOpArgsMinSize; ++at) {
    sdk::CheckedArgsCache<2> cache;
    cache.get(base, accept);
    cb_op_args changed = base;
    // 0x01: struct_size (80) stays one the cache compares (81), so byte 0 is tested too.
    reinterpret_cast<unsigned char*>(&changed)[at] ^= 0x01;
    checks = 0;
    const cb_op_args& got = cache.get(changed, accept);
    EXPECT_EQ(checks, 1) << "a struct differing at byte " << at << " was answered from the cache";
    EXPECT_EQ(std::memcmp(&got, &changed, sdk::kOpArgsMinSize), 0) << "byte " << at;
    cache.get(base, accept);
    EXPECT_EQ(checks, 1) << "the original struct was displaced by one that differs at byte " << at;
  }
  sdk::CheckedArgsCache<2> cache;
  checks = 0;
  cache.get(base, accept);
  cb_op_args padded = base;
  for (size_t at = sdk::kOpArgsMinSize; at < sizeof(cb_op_args); ++at)
    reinterpret_cast<unsigned char*>(&padded)[at] ^= 0xFF;
  cache.get(padded, accept);
  EXPECT_EQ(checks, 1) << "bytes after `tag` are not part of the key";
}
