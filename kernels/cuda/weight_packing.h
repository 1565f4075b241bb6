// Host-side weight packing for the CUDA GEMMs (run once at engine creation): conv weights
// [K, C/group, R, S] and QGemm/Gemm weights [N, K] become the GEMM's A operand, per group a
// row-major [Kout_pad, Kred_pad] matrix with zeros in the padding rows and columns
// (gemm_problem.h's conv layout). The same shape describes im2col's row length (Kred_pad).
#ifndef QCC_KERNELS_CUDA_WEIGHT_PACKING_H_
#define QCC_KERNELS_CUDA_WEIGHT_PACKING_H_

#include <cstdint>
#include <vector>

#include "kernels/cuda/conv_bodies.h"
#include "kernels/cuda/gemm_problem.h"

namespace qcc::cuda {

/// The GEMM shape of a (grouped) conv or a GEMM's weights.
struct ConvGemmShape {
  int64_t groups = 1;
  int64_t kout = 1;      // output channels per group (K / group; N for a GEMM)
  int64_t kout_pad = 1;  // kout rounded up to the alignment
  int64_t kred = 1;      // reduction length per group: C/group * R * S (K for a GEMM)
  int64_t kred_pad = 1;  // kred rounded up to the alignment

  /// Elements of the packed weights: groups * kout_pad * kred_pad.
  int64_t packed_elements() const { return groups * kout_pad * kred_pad; }
};

/// Shape for conv weights [k, c_per_group, r, s] with `groups` groups (k a multiple of groups),
/// padded to `align` (kInt8GemmAlign, kHalfGemmAlign or kFloatGemmAlign of gemm_problem.h).
ConvGemmShape MakeConvGemmShape(int64_t k, int64_t c_per_group, int64_t r, int64_t s,
                                int64_t groups, int64_t align);

/// Shape for GEMM weights [n, k] (ONNX Gemm transB = 1, QGemm's W): one group.
ConvGemmShape MakeGemmShape(int64_t n, int64_t k, int64_t align);

/// The NCHW GEMM (gemm_problem.h FloatConvGemmNchw) of a float conv with geometry `d` (d.n
/// images) and weights shaped `w`: fp32 (half false; w unpadded) reads the input itself when
/// FloatConvReadsInput(d), else an im2col with lda = OH*OW, and writes the output (ldc = OH*OW);
/// fp16 (w padded to kHalfGemmAlign) reads an fp16 im2col and writes fp32 accumulators, both with
/// rows padded to a multiple of kHalfGemmAlign (16-byte rows for the tensor cores). Group g's
/// operands start at A + g * kred * lda, W + g * kout_pad * kred_pad and Y + g * kout * ldc.
NchwConvGemmShape MakeNchwConvGemmShape(const ConvDims& d, const ConvGemmShape& w, bool half);

/// The per-image IMMA GEMM (gemm_problem.h Int8ConvGemmNchw) of an int8 conv with geometry `d` and
/// weights shaped `w` (padded to kInt8GemmAlign): m = pixels = OH*OW rounded up to 4, k = kred =
/// lda = ldb = w.kred_pad, n = w.kout, ldc = pixels. Group g's operands start at
/// A + g * pixels * kred, W + g * kout_pad * kred_pad and C + g * kout * ldc.
NchwConvGemmShape MakeInt8NchwConvGemmShape(const ConvDims& d, const ConvGemmShape& w);

/// w [groups * kout, kred] (conv [K, C/g, R, S] or GEMM [N, K], row-major) -> [groups][kout_pad]
/// [kred_pad] with zeros in the padding.
std::vector<int8_t> PackInt8Weights(const int8_t* w, const ConvGemmShape& shape);
/// As PackInt8Weights, converting fp32 to fp16 bits with FloatToHalf (support/float16.h).
std::vector<uint16_t> PackHalfWeights(const float* w, const ConvGemmShape& shape);
/// As PackInt8Weights, in fp32.
std::vector<float> PackFloatWeights(const float* w, const ConvGemmShape& shape);

/// rows x cols row-major -> rows x cols_pad with zeros in columns [cols, cols_pad) (the host
/// twin of PadRowsInt8 in conv_bodies.h; also for small constant operands).
std::vector<int8_t> PadRowsInt8Host(const int8_t* x, int64_t rows, int64_t cols, int64_t cols_pad);

}  // namespace qcc::cuda

#endif  // QCC_KERNELS_CUDA_WEIGHT_PACKING_H_
