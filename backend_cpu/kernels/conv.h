// fp32 convolution over NC[D]HW data: im2col + sgemm, and a direct depthwise kernel.
// 1-D and 2-D convolutions are 3-D ones whose leading spatial extents are 1.
#ifndef QCC_BACKEND_CPU_KERNELS_CONV_H_
#define QCC_BACKEND_CPU_KERNELS_CONV_H_

#include <array>
#include <cstdint>

namespace qcc::cpu {

/// Geometry of a grouped convolution. Spatial arrays are (depth, height, width); unused leading
/// axes have extent 1, stride 1, dilation 1 and pad 0. `pad` is the pad before each axis (the
/// pad after only shows in `out`).
struct ConvF32Params {
  int64_t batch = 1;
  int64_t in_channels = 1;   // C, a multiple of groups
  int64_t out_channels = 1;  // M, a multiple of groups
  int64_t groups = 1;
  std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, dilation{1, 1, 1}, pad{0, 0, 0};
  int num_threads = 1;  // for im2col and the depthwise kernel; GEMM has its own setting

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  /// True for a 1x1 (x1) kernel, stride 1, no pad: the input already is the im2col matrix.
  bool IsPointwise() const;
  /// True when every group has one input channel (depthwise, any channel multiplier).
  bool IsDepthwise() const { return in_channels == groups; }
};

/// Floats of scratch ConvF32Im2col needs (0 for pointwise convolutions).
int64_t ConvF32Im2colWorkspaceSize(const ConvF32Params& p);

/// y[n, m] = bias[m] + sum over c in m's group, kernel taps of w[m, c, k] * x[n, c, at(k)], with
/// x zero outside its extents. Shapes: x [N, C, in], w [M, C/groups, kernel], bias [M] or null,
/// y [N, M, out]. Lowers each (image chunk, group) to one im2col + sgemm; `workspace` holds
/// ConvF32Im2colWorkspaceSize(p) floats. No allocation.
void ConvF32Im2col(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                   float* y, float* workspace);

/// The same contract for depthwise convolutions (IsDepthwise()), computed directly without
/// im2col or sgemm, parallel over (image, channel) planes.
void ConvF32DepthwiseDirect(const ConvF32Params& p, const float* x, const float* w,
                            const float* bias, float* y);

}  // namespace qcc::cpu

#endif  // QCC_BACKEND_CPU_KERNELS_CONV_H_
