// cuBLASLt (kernels/cuda/cublaslt_gemm.h) on a device against the host ReferenceGemm:
// int8 IMMA problems bit for bit, fp16/fp32 problems within fp32 summation-order rounding.
// Skipped by name without a device (and compiled to skips only without CUDA).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend_cuda/cuda_info.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/gemm_problem.h"
#include "support/float16.h"

#if defined(QCC_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

namespace qcc::cuda {
namespace {

#if defined(QCC_HAVE_CUDA)

// A device buffer of `bytes` (+ `offset` bytes in front, to test misaligned operands).
class DeviceBuffer {
 public:
  DeviceBuffer(size_t bytes, size_t offset = 0) : offset_(offset) {
    EXPECT_EQ(cudaMalloc(&base_, bytes + offset + 16), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(base_); }
  void* get() const { return static_cast<char*>(base_) + offset_; }

 private:
  void* base_ = nullptr;
  size_t offset_ = 0;
};

template <typename T>
std::vector<T> Random(std::mt19937& rng, int64_t count, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

std::vector<float> RandomF(std::mt19937& rng, int64_t count) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// Runs `p` on the device (operands copied up, C down) and returns C's bytes.
std::vector<char> RunOnDevice(CublasLtGemm* gemm, const GemmProblem& p, const void* a,
                              const void* b, const void* c_init, size_t offset = 0) {
  const size_t a_bytes = p.a_elements() * GemmTypeBytes(p.a_type);
  const size_t b_bytes = p.b_elements() * GemmTypeBytes(p.b_type);
  const size_t c_bytes = p.c_elements() * GemmTypeBytes(p.c_type);
  DeviceBuffer da(a_bytes, offset), db(b_bytes, offset), dc(c_bytes, offset),
      ws(CublasLtGemm::kDefaultWorkspaceBytes);
  EXPECT_EQ(cudaMemcpy(da.get(), a, a_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(db.get(), b, b_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dc.get(), c_init, c_bytes, cudaMemcpyHostToDevice), cudaSuccess);
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  const absl::Status s = gemm->Run(p, da.get(), db.get(), dc.get(), ws.get(),
                                   CublasLtGemm::kDefaultWorkspaceBytes, stream);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  cudaStreamDestroy(stream);
  std::vector<char> out(c_bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), dc.get(), c_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

std::unique_ptr<CublasLtGemm> MakeGemm() {
  absl::StatusOr<std::unique_ptr<CublasLtGemm>> g = CublasLtGemm::Create();
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(*g) : nullptr;
}

#endif  // QCC_HAVE_CUDA

TEST(CublasLtGpu, Int8ImmaMatchesReferenceBitExact) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
#if defined(QCC_HAVE_CUDA)
  std::unique_ptr<CublasLtGemm> gemm = MakeGemm();
  ASSERT_NE(gemm, nullptr);
  std::mt19937 rng(11);
  const std::vector<GemmProblem> problems = {
      Int8ConvGemm(16, 28, 1024),        // conv 3x3 on 3 channels -> 16, 32x32
      Int8ConvGemm(64, 576, 3 * 8 * 8),  // 3x3x64 -> 64, batch 3
      Int8ConvGemm(8, 12, 49, 4),        // grouped (4 groups)
      Int8ConvGemm(4, 12, 100, 32),      // depthwise-like, 32 groups
      Int8Gemm(1, 1000, 512),            // classifier, batch 1
      Int8Gemm(64, 12, 132),             // small N, batch 64
      Int8ConvGemm(128, 1152, 7),        // odd n
      Int8ConvGemm(256, 4096, 256),      // large k
      // the int8 convs' per-image form (weights shared: stride_b 0): 7x7 output padded to 52
      // rows, 3 images; then one image of 56x56, k 12 (a 1x1 conv on 12 channels)
      Int8ConvGemmNchw({52, 10, 28, 28, 28, 52, 3, 52 * 28, 10 * 52}),
      Int8ConvGemmNchw({3136, 24, 12, 12, 12, 3136, 1, 3136 * 12, 24 * 3136}),
  };
  for (const GemmProblem& p : problems) {
    SCOPED_TRACE(p.ToString());
    const std::vector<int8_t> a = Random<int8_t>(rng, p.a_elements(), -128, 127);
    const std::vector<int8_t> b = Random<int8_t>(rng, p.b_elements(), -128, 127);
    std::vector<int32_t> want(p.c_elements(), 0x5a5a5a5a);
    const std::vector<int32_t> init = want;
    ReferenceGemm(p, a.data(), b.data(), want.data());
    for (size_t offset : {size_t{0}, size_t{4}}) {  // 256-byte and 4-byte aligned operands
      const std::vector<char> got =
          RunOnDevice(gemm.get(), p, a.data(), b.data(), init.data(), offset);
      ASSERT_EQ(got.size(), want.size() * 4);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0) << "offset " << offset;
    }
  }
  EXPECT_GE(gemm->cached_problems(), problems.size());
#endif
}

TEST(CublasLtGpu, HalfAndFloatMatchReferenceWithinRounding) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
#if defined(QCC_HAVE_CUDA)
  std::unique_ptr<CublasLtGemm> gemm = MakeGemm();
  ASSERT_NE(gemm, nullptr);
  std::mt19937 rng(12);
  std::vector<GemmProblem> problems = {
      HalfConvGemm(16, 32, 1024),
      HalfConvGemm(64, 576, 192),
      HalfConvGemm(8, 16, 49, 4),
      FloatConvGemm(7, 27, 100),
      FloatConvGemm(5, 9, 33, 3),
      // the float convs' per-image NCHW form (weights shared: stride_b 0): fp32 reading a
      // 5x7 input of 6 channels directly, 3 images; fp16 with rows padded to 40
      FloatConvGemmNchw({35, 4, 6, 35, 6, 35, 3, 6 * 35, 4 * 35}, GemmType::kFloat32),
      FloatConvGemmNchw({35, 10, 117, 40, 120, 40, 2, 117 * 40, 10 * 40}, GemmType::kHalf),
  };
  for (int t = 0; t < 4; ++t) {
    problems.push_back(FloatGemm(3, 1000, 512, t & 1, t & 2, 1.0f, 0.0f));
    problems.push_back(FloatGemm(17, 33, 65, t & 1, t & 2, 0.5f, 0.0f, GemmType::kHalf));
  }
  for (const GemmProblem& p : problems) {
    SCOPED_TRACE(p.ToString());
    const bool half = p.a_type == GemmType::kHalf;
    std::vector<float> af = RandomF(rng, p.a_elements()), bf = RandomF(rng, p.b_elements());
    std::vector<uint16_t> ah(af.size()), bh(bf.size());
    for (size_t i = 0; i < af.size(); ++i) ah[i] = FloatToHalf(af[i]);
    for (size_t i = 0; i < bf.size(); ++i) bh[i] = FloatToHalf(bf[i]);
    const void* a = half ? static_cast<const void*>(ah.data()) : af.data();
    const void* b = half ? static_cast<const void*>(bh.data()) : bf.data();
    std::vector<float> want(p.c_elements(), 0.0f);
    const std::vector<float> init = want;
    ReferenceGemm(p, a, b, want.data());
    // |a| <= 1 and |b| <= 1: each output's |terms| sum to at most k.
    const float tol = 2e-5f * static_cast<float>(p.k) * std::fabs(p.alpha);
    const std::vector<char> got_bytes = RunOnDevice(gemm.get(), p, a, b, init.data());
    std::vector<float> got(want.size());
    std::memcpy(got.data(), got_bytes.data(), got_bytes.size());
    int bad = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!(std::fabs(got[i] - want[i]) <= tol) && ++bad <= 5) {
        ADD_FAILURE() << "[" << i << "] " << got[i] << " vs " << want[i];
      }
    }
    EXPECT_EQ(bad, 0);
  }
#endif
}

TEST(CublasLtGpu, BadProblemIsAnErrorNamingTheField) {
  if (DeviceCount() == 0) GTEST_SKIP() << "no CUDA device";
#if defined(QCC_HAVE_CUDA)
  std::unique_ptr<CublasLtGemm> gemm = MakeGemm();
  ASSERT_NE(gemm, nullptr);
  GemmProblem p = Int8ConvGemm(8, 16, 10);
  p.m = 6;
  const absl::Status s = gemm->Prepare(p, 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("m=6"));
  EXPECT_EQ(gemm->cached_problems(), 0u);
  EXPECT_TRUE(gemm->Prepare(Int8ConvGemm(8, 16, 10), 0).ok());
  EXPECT_EQ(gemm->cached_problems(), 1u);
#endif
}

}  // namespace
}  // namespace qcc::cuda
