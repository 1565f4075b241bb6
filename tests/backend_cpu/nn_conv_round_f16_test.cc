// The fp16 rounding of an fp16 model's Conv (ActivationF32::round_to_f16), on every conv case:
// in the AVX-512 microkernels' epilogue (the plain, implicit-im2col, strided, transposed and
// Winograd tiles), in a pass after the other paths; either way RoundF32ToF16InPlace's bits.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/conv.h"
#include "kernels/cpu/qelementwise.h"
#include "tests/backend_cpu/nn_conv_cases.h"
#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

/// Bit-for-bit equality of two fp32 tensors (NaN equal to NaN of the same bits): the first
/// differing index, or "" when they agree.
std::string FirstBitDifference(const Tensor& got, const Tensor& want) {
  if (got.numel() != want.numel()) return "sizes differ";
  for (int64_t i = 0; i < got.numel(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, got.data<float>() + i, 4);
    std::memcpy(&b, want.data<float>() + i, 4);
    if (a != b) {
      return "element " + std::to_string(i) + ": got " + std::to_string(got.data<float>()[i]) +
             ", want " + std::to_string(want.data<float>()[i]);
    }
  }
  return "";
}

// Each case at 1 and 3 threads, through ConvF32 and ConvF32WithPacked, with no activation, a
// Clip and a LeakyRelu, without and with a residual, on inputs at three scales: ordinary values
// (most outputs not fp16 values, so the rounding shows), x 3e4 (sums past 65504: infinities) and
// x 1e-6 (fp16 subnormals). A NaN in x reaches the outputs that read it. Each result must equal
// the convolution without the rounding, then RoundF32ToF16InPlace.
TEST(NnConvTest, Fp16RoundingEqualsARoundingPassAfterTheConvolution) {
  int rounded_outputs = 0;  // outputs the rounding changed, over every run
  for (const ConvCase& cc : Cases()) {
    SCOPED_TRACE(cc.name);
    const CaseOperands base = OperandsOf(cc);
    const Tensor& w = base.w;
    const Dims y_dims = NcPlus(cc.n, cc.m, base.out);
    const Tensor r = RandomF32(y_dims, 4);
    const float* bias = base.bias();
    for (float scale : {1.0f, 3e4f, 1e-6f}) {
      Tensor x(DType::kFloat32, base.x.dims());
      for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = base.x.data<float>()[i] * scale;
      if (scale == 1.0f) x.data<float>()[x.numel() / 2] = std::numeric_limits<float>::quiet_NaN();
      cpu::ConvF32Params p = base.p;
      cpu::ConvF32Params one = p;
      one.batch = 1;
      const cpu::PackedConvF32 packed = cpu::PackConvF32Weights(one, w.data<float>());
      for (const cpu::ActivationF32& act : EpilogueActivations()) {
        for (const float* residual : {static_cast<const float*>(nullptr), r.data<float>()}) {
          for (int threads : {1, 3}) {
            SCOPED_TRACE(::testing::Message()
                         << "scale " << scale << ", slope " << act.negative_slope << ", residual "
                         << (residual != nullptr) << ", threads " << threads);
            p.num_threads = threads;
            p.residual = residual;
            p.activation = act;
            Tensor want(DType::kFloat32, y_dims);
            std::vector<float> ws(cpu::ConvF32WorkspaceSize(p) + 1);
            cpu::ConvF32(p, x.data<float>(), w.data<float>(), bias, want.data<float>(), ws.data());
            Tensor unrounded = want.Clone();
            cpu::RoundF32ToF16InPlace(want.numel(), want.data<float>(), 1);
            for (int64_t i = 0; i < want.numel(); ++i) {
              const float a = want.data<float>()[i], b = unrounded.data<float>()[i];
              rounded_outputs += a != b && !std::isnan(a);
            }
            p.activation.round_to_f16 = true;
            Tensor y(DType::kFloat32, y_dims), with_packed(DType::kFloat32, y_dims);
            ws.assign(cpu::ConvF32WorkspaceSize(p) + 1, 0.0f);
            cpu::ConvF32(p, x.data<float>(), w.data<float>(), bias, y.data<float>(), ws.data());
            EXPECT_EQ(FirstBitDifference(y, want), "") << "ConvF32";
            ws.assign(cpu::ConvF32WithPackedWorkspaceSize(p, packed) + 1, 0.0f);
            cpu::ConvF32WithPacked(p, x.data<float>(), w.data<float>(), packed, bias,
                                   with_packed.data<float>(), ws.data());
            EXPECT_EQ(FirstBitDifference(with_packed, want), "") << "ConvF32WithPacked";
          }
        }
      }
    }
  }
  // The rounding is not vacuous: most ordinary fp32 sums are not fp16 values.
  EXPECT_GT(rounded_outputs, 10000);
}

}  // namespace
}  // namespace qcc::testing
