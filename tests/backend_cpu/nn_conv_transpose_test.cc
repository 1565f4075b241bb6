// ConvTranspose on the CPU against ONNX's documented values and a naive scatter written here.
#include <gtest/gtest.h>

#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/op_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

/// The oracle: every x[n, c, i] scatters x * w[c, m, k] to y[n, g*M/g + m, i * s - p + k * d],
/// positions outside y dropped; y starts at the bias.
Tensor NaiveConvTranspose(const Tensor& x, const Tensor& w, const Tensor& b, int64_t group,
                          const std::vector<int64_t>& strides,
                          const std::vector<int64_t>& dilations,
                          const std::vector<int64_t>& pads_begin, const std::vector<int64_t>& out) {
  const int64_t n_img = x.dim(0), c_all = x.dim(1), mg = w.dim(1), m_all = mg * group;
  const int64_t cg = c_all / group;
  const auto in3 = To3(SpatialOf(x.dims()), 1), k3 = To3(SpatialOf(w.dims()), 1);
  const auto s3 = To3(strides, 1), d3 = To3(dilations, 1), p3 = To3(pads_begin, 0);
  const auto o3 = To3(out, 1);
  std::vector<double> acc(n_img * m_all * o3[0] * o3[1] * o3[2], 0.0);
  for (int64_t n = 0; n < n_img; ++n)
    for (int64_t c = 0; c < c_all; ++c)
      for (int64_t iz = 0; iz < in3[0]; ++iz)
        for (int64_t iy = 0; iy < in3[1]; ++iy)
          for (int64_t ix = 0; ix < in3[2]; ++ix) {
            const float xv =
                x.data<float>()[(((n * c_all + c) * in3[0] + iz) * in3[1] + iy) * in3[2] + ix];
            for (int64_t mi = 0; mi < mg; ++mi) {
              const int64_t m = c / cg * mg + mi;
              for (int64_t kz = 0; kz < k3[0]; ++kz)
                for (int64_t ky = 0; ky < k3[1]; ++ky)
                  for (int64_t kx = 0; kx < k3[2]; ++kx) {
                    const int64_t oz = iz * s3[0] - p3[0] + kz * d3[0];
                    const int64_t oy = iy * s3[1] - p3[1] + ky * d3[1];
                    const int64_t ox = ix * s3[2] - p3[2] + kx * d3[2];
                    if (oz < 0 || oy < 0 || ox < 0 || oz >= o3[0] || oy >= o3[1] || ox >= o3[2]) {
                      continue;
                    }
                    const float wv =
                        w.data<float>()[(((c * mg + mi) * k3[0] + kz) * k3[1] + ky) * k3[2] + kx];
                    acc[(((n * m_all + m) * o3[0] + oz) * o3[1] + oy) * o3[2] + ox] +=
                        double{xv} * wv;
                  }
            }
          }
  Tensor y(DType::kFloat32, NcPlus(n_img, m_all, out));
  const int64_t plane = o3[0] * o3[1] * o3[2];
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double bias = b.defined() ? b.data<float>()[i / plane % m_all] : 0.0;
    y.data<float>()[i] = static_cast<float>(acc[i] + bias);
  }
  return y;
}

struct Case {
  const char* name;
  int64_t n, c, m, group;
  std::vector<int64_t> in, kernel;
  std::vector<int64_t> strides = {}, dilations = {}, pads = {}, output_padding = {};
  bool bias = true;
};

TEST(NnConvTransposeTest, MatchesNaiveScatter) {
  const std::vector<Case> cases = {
      {"1x1", 2, 3, 4, 1, {4, 5}, {1, 1}},
      {"3x3_stride2_odd_channels", 1, 3, 5, 1, {4, 3}, {3, 3}, {2, 2}},
      {"stride3_pads_output_padding", 2, 2, 3, 1, {3, 3}, {3, 3}, {3, 2}, {}, {1, 2, 1, 2}, {1, 1}},
      {"stride_gt_kernel", 1, 2, 2, 1, {3, 4}, {2, 2}, {3, 3}},
      {"dilation_no_bias", 1, 2, 3, 1, {4, 4}, {3, 2}, {1, 2}, {2, 2}, {}, {}, false},
      {"groups2", 2, 4, 6, 2, {3, 3}, {3, 3}, {2, 2}, {}, {1, 1, 1, 1}},
      {"depthwise", 1, 4, 4, 4, {5, 5}, {4, 4}, {2, 2}, {}, {1, 1, 1, 1}},
      {"convtranspose1d", 2, 3, 2, 1, {5}, {3}, {2}},
      {"convtranspose3d", 1, 2, 3, 1, {3, 4, 2}, {2, 3, 3}, {2, 1, 2}, {}, {0, 1, 1, 1, 0, 0}},
      // The 2x upsampling of decoders (2x2, stride 2, no pads; AVX-512 runs it direct): rows of
      // 32 + 5 and 3 columns (masked tails), batch 2, with and without bias; and with output
      // padding or a pad, which take the general path.
      {"upsample2x", 2, 24, 5, 1, {3, 37}, {2, 2}, {2, 2}},
      {"upsample2x_narrow_no_bias", 1, 3, 2, 1, {4, 3}, {2, 2}, {2, 2}, {}, {}, {}, false},
      {"upsample2x_output_padding", 1, 4, 3, 1, {3, 5}, {2, 2}, {2, 2}, {}, {}, {1, 1}},
      {"upsample2x_pads", 1, 4, 3, 1, {3, 5}, {2, 2}, {2, 2}, {}, {1, 0, 0, 1}},
  };
  for (const Case& cc : cases) {
    SCOPED_TRACE(cc.name);
    const size_t r = cc.in.size();
    const Tensor x = RandomF32(NcPlus(cc.n, cc.c, cc.in), 11);
    const Tensor w = RandomF32(NcPlus(cc.c, cc.m / cc.group, cc.kernel), 12);
    const Tensor b = cc.bias ? RandomF32({cc.m}, 13) : Tensor();
    std::vector<int64_t> pb(r, 0), out(r);
    for (size_t i = 0; i < r; ++i) {
      const int64_t s = cc.strides.empty() ? 1 : cc.strides[i];
      const int64_t d = cc.dilations.empty() ? 1 : cc.dilations[i];
      const int64_t op = cc.output_padding.empty() ? 0 : cc.output_padding[i];
      pb[i] = cc.pads.empty() ? 0 : cc.pads[i];
      const int64_t pe = cc.pads.empty() ? 0 : cc.pads[r + i];
      out[i] = s * (cc.in[i] - 1) + op + (cc.kernel[i] - 1) * d + 1 - pb[i] - pe;
    }
    ir::ConvTransposeAttrs a;
    a.group = cc.group;
    a.strides = cc.strides;
    a.dilations = cc.dilations;
    a.pads = cc.pads;
    a.output_padding = cc.output_padding;
    auto y = RunSingleOp(ir::OpKind::kConvTranspose, a, {{x}, {w, true}, {b, true}});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(CompareTensors(
                  (*y)[0], NaiveConvTranspose(x, w, b, cc.group, cc.strides, cc.dilations, pb, out),
                  1e-4, 1e-4),
              "");
  }
}

// ONNX's test_convtranspose_pads example: 3x3 ramp, two 3x3 ones filters, strides [3, 2],
// pads [1, 2, 1, 2] -> 7x3.
TEST(NnConvTransposeTest, HandValuesWithPads) {
  const Tensor x = F32({1, 1, 3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8});
  const Tensor w = F32({1, 2, 3, 3}, std::vector<float>(18, 1.0f));
  ir::ConvTransposeAttrs a;
  a.strides = {3, 2};
  a.pads = {1, 2, 1, 2};
  auto y = RunSingleOp(ir::OpKind::kConvTranspose, a, {{x}, {w, true}});
  ASSERT_TRUE(y.ok()) << y.status();
  const std::vector<float> plane = {1, 1, 3, 1, 1,  3, 7,  4,  9, 7, 4,
                                    9, 7, 4, 9, 13, 7, 15, 13, 7, 15};
  std::vector<float> want = plane;
  want.insert(want.end(), plane.begin(), plane.end());
  EXPECT_EQ(CompareTensors((*y)[0], F32({1, 2, 7, 3}, want), 0, 0), "");
}

// auto_pad SAME_UPPER: output = input * stride; the odd pad pixel goes at the end, so the
// result is the unpadded output cropped from the start (ONNX test_convtranspose_autopad_same).
// output_shape larger than the natural extent leaves the extra positions at the bias.
TEST(NnConvTransposeTest, AutoPadAndOutputShape) {
  const Tensor x = RandomF32({1, 2, 3, 3}, 14);
  const Tensor w = RandomF32({2, 3, 3, 3}, 15);
  const Tensor b = RandomF32({3}, 16);
  struct Sub {
    ir::AutoPad mode;
    std::vector<int64_t> output_shape, out, pads_begin;
  };
  // Natural extent 2*(3-1)+3 = 7. SAME: out 6, total 1.
  for (const Sub& s : {Sub{ir::AutoPad::kSameUpper, {}, {6, 6}, {0, 0}},
                       Sub{ir::AutoPad::kSameLower, {}, {6, 6}, {1, 1}},
                       Sub{ir::AutoPad::kValid, {}, {7, 7}, {0, 0}},
                       Sub{ir::AutoPad::kNotSet, {5, 9}, {5, 9}, {1, 0}},
                       Sub{ir::AutoPad::kSameUpper, {5, 8}, {5, 8}, {1, 0}}}) {
    ir::ConvTransposeAttrs a;
    a.auto_pad = s.mode;
    a.strides = {2, 2};
    a.output_shape = s.output_shape;
    auto y = RunSingleOp(ir::OpKind::kConvTranspose, a, {{x}, {w, true}, {b, true}});
    ASSERT_TRUE(y.ok()) << y.status();
    EXPECT_EQ(
        CompareTensors((*y)[0], NaiveConvTranspose(x, w, b, 1, {2, 2}, {}, s.pads_begin, s.out),
                       1e-4, 1e-4),
        "")
        << static_cast<int>(s.mode);
  }
}

TEST(NnConvTransposeTest, RejectsChannelMismatch) {
  const Tensor x = RandomF32({1, 3, 4, 4}, 17);
  auto y = RunSingleOp(ir::OpKind::kConvTranspose, ir::ConvTransposeAttrs{},
                       {{x}, {RandomF32({2, 3, 3, 3}, 18), true}});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(y.status().message().find("channels"), absl::string_view::npos) << y.status();
}

}  // namespace
}  // namespace qcc::testing
