// fp32 transposed convolution (ONNX ConvTranspose) over NC[D]HW data: sgemm + col2im.
#ifndef QCC_KERNELS_CPU_CONV_TRANSPOSE_H_
#define QCC_KERNELS_CPU_CONV_TRANSPOSE_H_

#include <cstdint>

#include "kernels/cpu/conv.h"

namespace qcc::cpu {

// ConvTranspose is the adjoint of a convolution: the transposed op's output y plays the conv's
// input and its input x the conv's output. Both kernels below take that *forward* conv's
// ConvF32Params `fwd`: fwd.in_channels = M and fwd.in = y's spatial extents, fwd.out_channels
// = C and fwd.out = x's spatial extents, fwd.pad = the ConvTranspose pads before each axis.
// The ConvTranspose weight [C, M/groups, kernel] then is exactly fwd's conv weight layout.

/// Floats of scratch ConvTransposeF32Col2im needs.
int64_t ConvTransposeF32WorkspaceSize(const ConvF32Params& fwd);

/// y[n, m, i] = bias[m] + sum over c in m's group, taps k, positions o with
/// o * stride - pad + k * dilation = i of x[n, c, o] * w[c, m % (M/groups), k].
/// x [N, C, fwd.out], w [C, M/groups, kernel], bias [M] or null, y [N, M, fwd.in]. Per image
/// and group one sgemm (W^T x) and a col2im scatter-add; no allocation but the sgemm's own
/// packing buffers (GemmF32).
/// On CPUs with AVX-512F, a 2x2 kernel of stride 2 without pads, groups or output padding (a
/// decoder's learned 2x upsampling) runs direct instead (ConvTransposeUpsample2xAvx512: each
/// output the bias plus one multiply-add per input channel, in channel order), with no workspace.
void ConvTransposeF32Col2im(const ConvF32Params& fwd, const float* x, const float* w,
                            const float* bias, float* y, float* workspace);

namespace internal {

/// Whether `fwd` is the 2x upsampling ConvTransposeUpsample2xAvx512 computes: 2x2 kernel,
/// stride 2 and no pads on the last two axes, extent 1 and stride 1 on the first, one group,
/// and y exactly twice x's extents (no output padding).
bool ConvTransposeUpsample2xApplies(const ConvF32Params& fwd);
/// ConvTransposeF32Col2im's result for such an `fwd` (up to rounding: a fused multiply-add per
/// channel from the bias), in registers; only on CPUs with AVX-512F.
void ConvTransposeUpsample2xAvx512(const ConvF32Params& fwd, const float* x, const float* w,
                                   const float* bias, float* y);

}  // namespace internal

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_CONV_TRANSPOSE_H_
