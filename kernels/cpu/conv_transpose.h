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
void ConvTransposeF32Col2im(const ConvF32Params& fwd, const float* x, const float* w,
                            const float* bias, float* y, float* workspace);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_CONV_TRANSPOSE_H_
