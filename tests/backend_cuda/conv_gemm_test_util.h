// Shared by the host tests of the CUDA backend's convolutions and GEMMs (qconv_qgemm_test.cc,
// float_conv_test.cc, gemm_problem_test.cc): the convolution cases every path is checked on, their
// geometry as the kernel bodies see it, seeded random operands and the fused activations.
#ifndef QCC_TESTS_BACKEND_CUDA_CONV_GEMM_TEST_UTIL_H_
#define QCC_TESTS_BACKEND_CUDA_CONV_GEMM_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "kernels/cuda/conv_bodies.h"

namespace qcc::cuda::test_util {

struct ConvCase {
  int64_t n, c, h, w, k, r, s;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1, group = 1;
};

inline std::string Describe(const ConvCase& g) {
  return absl::StrCat("N", g.n, " C", g.c, " ", g.h, "x", g.w, " K", g.k, " ", g.r, "x", g.s,
                      " stride ", g.stride_h, ",", g.stride_w, " pads ", g.pad_top, ",", g.pad_left,
                      ",", g.pad_bottom, ",", g.pad_right, " dil ", g.dilation_h, ",", g.dilation_w,
                      " group ", g.group);
}

inline std::vector<ConvCase> ConvCases() {
  std::vector<ConvCase> cases;
  auto add = [&](ConvCase c) { cases.push_back(c); };
  add({1, 3, 8, 8, 4, 1, 1});                               // 1x1
  add({1, 8, 7, 9, 16, 1, 1});                              // 1x1, odd spatial
  add({3, 5, 6, 6, 7, 1, 1, 2, 2});                         // 1x1 stride 2, batch 3
  add({3, 6, 5, 7, 4, 1, 1});                               // 1x1, batch 3 (fp32: no im2col)
  add({2, 10, 6, 6, 10, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 5});  // grouped 1x1, batch 2
  add({1, 3, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1});             // 3x3 pad 1
  add({3, 7, 10, 11, 5, 3, 3, 2, 2, 1, 1, 1, 1});           // 3x3 stride 2, odd C/K
  add({1, 5, 12, 12, 6, 5, 5, 1, 1, 2, 2, 2, 2});           // 5x5 pad 2
  add({1, 4, 13, 11, 3, 5, 5, 2, 1, 0, 2, 1, 0});           // asymmetric stride and pads
  add({1, 6, 12, 12, 4, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2});     // dilation 2
  add({3, 3, 9, 8, 5, 3, 2, 1, 2, 1, 0, 0, 1, 1, 3});       // non-square kernel, dil 1/3
  add({1, 8, 9, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 8});    // depthwise
  add({3, 6, 8, 7, 12, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 6});   // depthwise, multiplier 2
  add({1, 12, 7, 7, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3});   // grouped (4 -> 2 per group)
  add({1, 10, 6, 6, 10, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 5});  // grouped 1x1
  add({1, 14, 5, 5, 21, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 7});  // 7 groups, odd sizes
  add({1, 3, 1, 1, 5, 1, 1});                               // 1x1 image
  add({1, 16, 4, 4, 9, 4, 4});                              // kernel = image
  add({3, 32, 5, 5, 33, 3, 3, 1, 1, 1, 1, 1, 1});           // K not a multiple of 4
  add({1, 2, 5, 5, 3, 3, 3, 3, 3, 2, 2, 2, 2});             // pads beyond stride
  return cases;
}

inline ConvDims ToDims(const ConvCase& g) {
  ConvDims d;
  d.n = g.n;
  d.c = g.c;
  d.h = g.h;
  d.w = g.w;
  d.k = g.k;
  d.r = g.r;
  d.s = g.s;
  d.stride_h = g.stride_h;
  d.stride_w = g.stride_w;
  d.pad_top = g.pad_top;
  d.pad_left = g.pad_left;
  d.dilation_h = g.dilation_h;
  d.dilation_w = g.dilation_w;
  d.group = g.group;
  d.oh = (g.h + g.pad_top + g.pad_bottom - g.dilation_h * (g.r - 1) - 1) / g.stride_h + 1;
  d.ow = (g.w + g.pad_left + g.pad_right - g.dilation_w * (g.s - 1) - 1) / g.stride_w + 1;
  return d;
}

template <typename T>
inline std::vector<T> RandomInts(std::mt19937& rng, size_t count, int lo, int hi) {
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(count);
  for (T& x : v) x = static_cast<T>(dist(rng));
  return v;
}

inline std::vector<float> RandomFloats(std::mt19937& rng, size_t count, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

// Requantization multipliers that spread the outputs over the int8 range for sums of `kred`
// products of int8 values.
inline std::vector<float> Multipliers(std::mt19937& rng, int64_t count, int64_t kred) {
  const float base = 60.0f / (std::sqrt(static_cast<float>(kred)) * 127.0f * 70.0f);
  return RandomFloats(rng, count, 0.5f * base, 2.0f * base);
}

struct Act {
  float lo, hi, slope;
};
inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr Act kActs[] = {
    {-kInf, kInf, 1.0f}, {0.0f, kInf, 1.0f}, {0.0f, 6.0f, 1.0f}, {-kInf, kInf, 0.1f}};

/// Every element of `got` within 1e-5 of `scale` (the sum of its terms' magnitudes: the scale of
/// its rounding error) of `want`; the first five misses named.
inline void ExpectClose(const std::vector<float>& got, const std::vector<float>& want,
                        const std::vector<float>& scale, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float tol = 1e-5f * scale[i] + 1e-30f;
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      if (++bad <= 5) {
        ADD_FAILURE() << what << " [" << i << "]: " << got[i] << " vs " << want[i] << " (tol "
                      << tol << ")";
      }
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace qcc::cuda::test_util

#endif  // QCC_TESTS_BACKEND_CUDA_CONV_GEMM_TEST_UTIL_H_
