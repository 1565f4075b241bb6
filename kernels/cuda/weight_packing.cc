// Weight packing for the CUDA GEMMs (weight_packing.h).
#include "kernels/cuda/weight_packing.h"

#include "kernels/cuda/gemm_problem.h"
#include "support/float16.h"

namespace qcc::cuda {

ConvGemmShape MakeConvGemmShape(int64_t k, int64_t c_per_group, int64_t r, int64_t s,
                                int64_t groups, int64_t align) {
  ConvGemmShape shape;
  shape.groups = groups;
  shape.kout = k / groups;
  shape.kout_pad = RoundUpTo(shape.kout, align);
  shape.kred = c_per_group * r * s;
  shape.kred_pad = RoundUpTo(shape.kred, align);
  return shape;
}

NchwConvGemmShape MakeNchwConvGemmShape(const ConvDims& d, const ConvGemmShape& w, bool half) {
  NchwConvGemmShape g;
  g.pixels = d.oh * d.ow;
  g.kout = w.kout;
  g.kred = w.kred;
  g.ldb = w.kred_pad;
  g.images = d.n;
  if (!half && FloatConvReadsInput(d)) {
    g.lda = g.pixels;
    g.stride_a = d.c * g.pixels;
  } else {
    g.lda = half ? RoundUpTo(g.pixels, kHalfGemmAlign) : g.pixels;
    g.stride_a = d.c * d.r * d.s * g.lda;
  }
  g.ldc = half ? RoundUpTo(g.pixels, kHalfGemmAlign) : g.pixels;
  g.stride_c = d.k * g.ldc;
  return g;
}

NchwConvGemmShape MakeInt8NchwConvGemmShape(const ConvDims& d, const ConvGemmShape& w) {
  NchwConvGemmShape g;
  g.pixels = RoundUpTo(d.oh * d.ow, kInt8GemmAlign);
  g.kout = w.kout;
  g.kred = g.lda = g.ldb = w.kred_pad;
  g.ldc = g.pixels;
  g.images = d.n;
  g.stride_a = d.group * g.pixels * g.lda;
  g.stride_c = d.k * g.ldc;
  return g;
}

ConvGemmShape MakeGemmShape(int64_t n, int64_t k, int64_t align) {
  return MakeConvGemmShape(n, k, 1, 1, 1, align);
}

namespace {

template <typename To, typename From, typename Convert>
std::vector<To> Pack(const From* w, const ConvGemmShape& shape, Convert convert) {
  std::vector<To> out(static_cast<size_t>(shape.packed_elements()), To{0});
  for (int64_t g = 0; g < shape.groups; ++g) {
    for (int64_t k = 0; k < shape.kout; ++k) {
      const From* src = w + (g * shape.kout + k) * shape.kred;
      To* dst = out.data() + (g * shape.kout_pad + k) * shape.kred_pad;
      for (int64_t i = 0; i < shape.kred; ++i) dst[i] = convert(src[i]);
    }
  }
  return out;
}

}  // namespace

std::vector<int8_t> PackInt8Weights(const int8_t* w, const ConvGemmShape& shape) {
  return Pack<int8_t>(w, shape, [](int8_t v) { return v; });
}

std::vector<uint16_t> PackHalfWeights(const float* w, const ConvGemmShape& shape) {
  return Pack<uint16_t>(w, shape, [](float v) { return FloatToHalf(v); });
}

std::vector<float> PackFloatWeights(const float* w, const ConvGemmShape& shape) {
  return Pack<float>(w, shape, [](float v) { return v; });
}

std::vector<int8_t> PadRowsInt8Host(const int8_t* x, int64_t rows, int64_t cols, int64_t cols_pad) {
  std::vector<int8_t> out(static_cast<size_t>(rows * cols_pad), 0);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) out[r * cols_pad + c] = x[r * cols + c];
  }
  return out;
}

}  // namespace qcc::cuda
