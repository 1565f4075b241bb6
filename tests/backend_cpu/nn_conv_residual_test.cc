// The residual of a shortcut Add fused into the fp32 convolution (ConvF32Params::residual), on
// every conv case.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cpu/conv.h"
#include "tests/backend_cpu/nn_conv_cases.h"
#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

// A residual (ConvF32Params::residual) on every case, through ConvF32 and ConvF32WithPacked at 1
// and 3 threads, with and without an activation: bit for bit the convolution without it, then
// act(y + residual) element by element (what a Conv step followed by an Add step computes). On
// AVX-512 the microkernels add it in their epilogue (the plain tile, the implicit-im2col tile and
// the transposed one); the depthwise and other paths add it in a pass after the convolution.
TEST(NnConvTest, ResidualIsAddedBeforeTheActivation) {
  for (const ConvCase& cc : Cases()) {
    SCOPED_TRACE(cc.name);
    CaseOperands o = OperandsOf(cc);
    const Tensor &x = o.x, &w = o.w;
    cpu::ConvF32Params& p = o.p;
    const Dims y_dims = NcPlus(cc.n, cc.m, o.out);
    const Tensor r = RandomF32(y_dims, 4);
    const float* bias = o.bias();
    cpu::ConvF32Params one = p;
    one.batch = 1;
    const cpu::PackedConvF32 packed = cpu::PackConvF32Weights(one, w.data<float>());
    for (const cpu::ActivationF32& act : EpilogueActivations()) {
      for (int threads : {1, 3}) {
        p.num_threads = threads;
        p.activation = cpu::ActivationF32{};
        p.residual = nullptr;
        Tensor want(DType::kFloat32, y_dims);
        std::vector<float> ws(cpu::ConvF32WorkspaceSize(p) + 1);
        cpu::ConvF32(p, x.data<float>(), w.data<float>(), bias, want.data<float>(), ws.data());
        for (int64_t i = 0; i < want.numel(); ++i) {
          want.data<float>()[i] = act(want.data<float>()[i] + r.data<float>()[i]);
        }
        p.activation = act;
        p.residual = r.data<float>();
        Tensor y(DType::kFloat32, y_dims), with_packed(DType::kFloat32, y_dims);
        ws.assign(cpu::ConvF32WorkspaceSize(p) + 1, 0.0f);
        cpu::ConvF32(p, x.data<float>(), w.data<float>(), bias, y.data<float>(), ws.data());
        EXPECT_EQ(CompareTensors(y, want, 0, 0), "")
            << "ConvF32, threads " << threads << ", slope " << act.negative_slope;
        ws.assign(cpu::ConvF32WithPackedWorkspaceSize(p, packed) + 1, 0.0f);
        cpu::ConvF32WithPacked(p, x.data<float>(), w.data<float>(), packed, bias,
                               with_packed.data<float>(), ws.data());
        EXPECT_EQ(CompareTensors(with_packed, want, 0, 0), "")
            << "ConvF32WithPacked, threads " << threads << ", slope " << act.negative_slope;
      }
    }
  }
}

}  // namespace
}  // namespace qcc::testing
