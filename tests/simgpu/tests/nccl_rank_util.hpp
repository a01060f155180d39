// Helpers of the test rank program: failure reporting, element encoding written independently of the
// simulation's, the data pattern and its expected reductions, device buffers.
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdarg>
#include <cstring>
#include <string>
#include <vector>

#include "nccl_rank_api.hpp"

namespace rank_util {

inline int g_rank = 0, g_n = 1;
inline NcclFns* g = nullptr;

[[noreturn]] inline void fail(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::fprintf(stderr, "rank %d: FAIL: ", g_rank);
  std::vfprintf(stderr, fmt, ap);
  std::fprintf(stderr, "\n");
  va_end(ap);
  std::exit(1);
}
#define CHECK(cond, ...) \
  do {                   \
    if (!(cond)) fail(__VA_ARGS__); \
  } while (0)
#define NCCL_OK(expr)                                                                         \
  do {                                                                                        \
    ncclResult_t r_ = (expr);                                                                 \
    if (r_ != ncclSuccess) fail("%s -> %d (%s)", #expr, static_cast<int>(r_), g->ncclGetLastError(nullptr)); \
  } while (0)
#define CUDA_OK(expr)                                                                     \
  do {                                                                                    \
    cudaError_t e_ = (expr);                                                              \
    if (e_ != cudaSuccess) fail("%s -> %s", #expr, cudaGetErrorName(e_));                \
  } while (0)

inline ncclUniqueId parse_uid(const char* hex) {
  ncclUniqueId id{};
  for (size_t i = 0; i < sizeof id.internal && hex[2 * i] && hex[2 * i + 1]; ++i) {
    unsigned v = 0;
    std::sscanf(hex + 2 * i, "%2x", &v);
    id.internal[i] = static_cast<char>(v);
  }
  return id;
}

// ---- element encoding, written independently of the simulation's ----------------------------------------
inline double fp8_decode(uint8_t v, bool e4m3) {
  const int mbits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  const int e = (v & 0x7f) >> mbits, m = v & ((1 << mbits) - 1);
  double mag = e == 0 ? std::ldexp(m, 1 - bias - mbits) : std::ldexp(1.0 + m / double(1 << mbits), e - bias);
  return (v & 0x80) ? -mag : mag;
}
inline uint8_t fp8_encode_exact(double x, bool e4m3) {
  for (int c = 0; c < 256; ++c)
    if (fp8_decode(static_cast<uint8_t>(c), e4m3) == x) return static_cast<uint8_t>(c);
  fail("%g is not exactly representable in fp8", x);
}

inline size_t esize(ncclDataType_t t) {
  static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return s[t];
}
inline bool floating(ncclDataType_t t) { return t >= ncclFloat16; }

inline void put(ncclDataType_t t, std::vector<char>& b, size_t i, double v) {
  char* p = b.data() + i * esize(t);
  switch (t) {
    case ncclInt8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case ncclUint8: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v); break;
    case ncclInt32: *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    case ncclUint32: *reinterpret_cast<uint32_t*>(p) = static_cast<uint32_t>(v); break;
    case ncclInt64: *reinterpret_cast<int64_t*>(p) = static_cast<int64_t>(v); break;
    case ncclUint64: *reinterpret_cast<uint64_t*>(p) = static_cast<uint64_t>(v); break;
    case ncclFloat16: { _Float16 h = static_cast<_Float16>(v); std::memcpy(p, &h, 2); break; }
    case ncclFloat32: *reinterpret_cast<float*>(p) = static_cast<float>(v); break;
    case ncclFloat64: *reinterpret_cast<double*>(p) = v; break;
    case ncclBfloat16: { float f = static_cast<float>(v); uint32_t u; std::memcpy(&u, &f, 4); uint16_t h = u >> 16; std::memcpy(p, &h, 2); break; }
    case ncclFloat8e4m3: *reinterpret_cast<uint8_t*>(p) = fp8_encode_exact(v, true); break;
    case ncclFloat8e5m2: *reinterpret_cast<uint8_t*>(p) = fp8_encode_exact(v, false); break;
    default: break;
  }
}

inline double get(ncclDataType_t t, const std::vector<char>& b, size_t i) {
  const char* p = b.data() + i * esize(t);
  switch (t) {
    case ncclInt8: return *reinterpret_cast<const int8_t*>(p);
    case ncclUint8: return *reinterpret_cast<const uint8_t*>(p);
    case ncclInt32: return *reinterpret_cast<const int32_t*>(p);
    case ncclUint32: return *reinterpret_cast<const uint32_t*>(p);
    case ncclInt64: return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
    case ncclUint64: return static_cast<double>(*reinterpret_cast<const uint64_t*>(p));
    case ncclFloat16: { _Float16 h; std::memcpy(&h, p, 2); return static_cast<double>(h); }
    case ncclFloat32: return *reinterpret_cast<const float*>(p);
    case ncclFloat64: return *reinterpret_cast<const double*>(p);
    case ncclBfloat16: { uint16_t h; std::memcpy(&h, p, 2); uint32_t u = uint32_t{h} << 16; float f; std::memcpy(&f, &u, 4); return f; }
    case ncclFloat8e4m3: return fp8_decode(*reinterpret_cast<const uint8_t*>(p), true);
    case ncclFloat8e5m2: return fp8_decode(*reinterpret_cast<const uint8_t*>(p), false);
    default: return 0;
  }
}

// Inputs chosen so every partial result is exact in every type (fp8 e5m2 included).
inline double val(ncclRedOp_t op, int r, size_t i) {
  switch (op) {
    case ncclSum: case ncclAvg: return 1 + static_cast<double>((i + static_cast<size_t>(r)) % 2);
    case ncclProd: return 1 + static_cast<double>((i * 7 + static_cast<size_t>(r)) % 2);
    default: return static_cast<double>((i * 3 + static_cast<size_t>(r) * 5) % 7);
  }
}
inline double fold(ncclDataType_t t, ncclRedOp_t op, size_t i, size_t elem_of_rank_offset = 0) {
  double acc = val(op, 0, i + elem_of_rank_offset);
  for (int r = 1; r < g_n; ++r) {
    double x = val(op, r, i + elem_of_rank_offset);
    switch (op) {
      case ncclProd: acc *= x; break;
      case ncclMax: acc = std::max(acc, x); break;
      case ncclMin: acc = std::min(acc, x); break;
      default: acc += x; break;
    }
  }
  if (op == ncclAvg) acc = floating(t) ? acc / g_n : std::floor(acc / g_n);
  return acc;
}

struct Dev {
  void* p = nullptr;
  size_t bytes = 0;
  explicit Dev(size_t n) : bytes(n) { CUDA_OK(cudaMalloc(&p, n == 0 ? 1 : n)); }
  ~Dev() { cudaFree(p); }
  char* c() const { return static_cast<char*>(p); }
  // A pageable cudaMemcpy to the device may return before the data lands, on the legacy stream the
  // tests' non-blocking streams do not wait for: the device is synchronised before the data is used.
  void upload(const std::vector<char>& h) const {
    CUDA_OK(cudaMemcpy(p, h.data(), h.size(), cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize());
  }
  std::vector<char> download(size_t n) const {
    std::vector<char> h(n);
    CUDA_OK(cudaMemcpy(h.data(), p, n, cudaMemcpyDeviceToHost));
    return h;
  }
};

inline void settle(ncclComm_t comm, cudaStream_t s, const char* what) {
  CUDA_OK(cudaStreamSynchronize(s));
  ncclResult_t a = ncclSuccess;
  NCCL_OK(g->ncclCommGetAsyncError(comm, &a));
  CHECK(a == ncclSuccess, "%s: async error %d (%s)", what, a, g->ncclGetLastError(comm));
}

inline void expect_equal(ncclDataType_t t, const std::vector<char>& got, size_t i, double want, const char* what) {
  const double v = get(t, got, i);
  CHECK(v == want, "%s dtype %d element %zu: got %g, expected %g", what, t, i, v, want);
}

inline ncclComm_t init_blocking(const ncclUniqueId& id) {
  ncclComm_t comm = nullptr;
  NCCL_OK(g->ncclCommInitRank(&comm, g_n, id, g_rank));
  int n = 0, r = -1;
  NCCL_OK(g->ncclCommCount(comm, &n));
  NCCL_OK(g->ncclCommUserRank(comm, &r));
  CHECK(n == g_n && r == g_rank, "count/rank %d/%d", n, r);
  return comm;
}

}  // namespace rank_util
