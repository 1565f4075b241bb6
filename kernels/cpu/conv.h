// fp32 convolution over NC[D]HW data: im2col + sgemm, and a direct depthwise kernel.
// 1-D and 2-D convolutions are 3-D ones whose leading spatial extents are 1.
#ifndef QCC_KERNELS_CPU_CONV_H_
#define QCC_KERNELS_CPU_CONV_H_

#include <array>
#include <cstdint>
#include <vector>

#include "kernels/cpu/activation.h"
#include "support/aligned_allocator.h"
#include "support/conv_geometry.h"

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
  int num_threads = 1;  // for im2col, the depthwise kernel and the GEMMs
  /// Applied to every output in the kernel's epilogue (ConvF32 and the kernels behind it; the
  /// transposed convolution ignores it). Its round_to_f16 (an fp16 model's Conv) the AVX-512
  /// microkernels apply in their epilogue too, after the residual and the activation; on the
  /// other paths ConvF32 rounds y in a pass after the convolution, with the same bits.
  ActivationF32 activation;
  /// When not null, a tensor of y's shape added to every output before the activation: y =
  /// act(conv + residual), each sum rounded once as a separate Add would (a ResNet's shortcut).
  /// ConvF32 and ConvF32WithPacked take it; the AVX-512 microkernels add it in their epilogue,
  /// the other paths in a pass over y after the convolution. It may not overlap x or y.
  const float* residual = nullptr;
  /// Lets the AVX-512 path run 3x3 stride-1 convolutions as Winograd F(2x2, 3x3): 2.25x fewer
  /// multiply-adds, rounded differently (within 1e-4 of the exact sum in the tests). False keeps
  /// every output the bias plus one multiply-add per (channel, tap), the sum the AVX2 path also
  /// computes, so results do not depend on which of the two this CPU runs (calibration's
  /// statistics). The packing depends on it.
  bool winograd = true;

  int64_t in_size() const { return in[0] * in[1] * in[2]; }
  int64_t out_size() const { return out[0] * out[1] * out[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  /// True for a 1x1 (x1) kernel, stride 1, no pad: the input already is the im2col matrix.
  bool IsPointwise() const;
  /// True when every group has one input channel (depthwise, any channel multiplier).
  bool IsDepthwise() const { return in_channels == groups; }
  /// A 2-D convolution's geometry (a plan step's, support/conv_geometry.h) on the last two
  /// axes, with its kernel extents: strides, dilations, begin pads (the end pads only show in
  /// `out`), groups and kernel. The leading axis stays extent 1.
  void SetGeometry2d(const ConvGeometry& g, int64_t kernel_h, int64_t kernel_w);
};

/// Floats of scratch ConvF32 needs for `p` (including p.num_threads per-thread buffers).
int64_t ConvF32WorkspaceSize(const ConvF32Params& p);

/// y[n, m] = act(bias[m] + sum over c in m's group, kernel taps of w[m, c, k] * x[n, c, at(k)]),
/// with x zero outside its extents and act = p.activation. Shapes: x [N, C, in], w [M, C/groups,
/// kernel], bias [M] or null, y [N, M, out]; `workspace` holds ConvF32WorkspaceSize(p) floats.
/// Picks the kernel below that fits: direct depthwise, the AVX-512 microkernel where the CPU has
/// it, else the AVX2 one where it has AVX2 and FMA, else im2col + sgemm. No allocation
/// but the sgemm's own packing buffers (GemmF32, on the im2col path only).
void ConvF32(const ConvF32Params& p, const float* x, const float* w, const float* bias, float* y,
             float* workspace);

/// Packed weights, 64-byte aligned: the kernels read them in full-width vectors, and a zmm load
/// that crosses two cache lines (std::allocator aligns to 16 bytes) costs Intel cores two loads.
using PackedConvF32 = std::vector<float, AlignedAllocator<float>>;

/// Weights ConvF32 would pack on every call, packed once: empty when the kernel it picks reads
/// w as it is (depthwise, or neither AVX-512 nor AVX2). They depend on channels, groups, the
/// kernel's extents, strides and dilations only (the AVX-512 path packs 3x3 stride-1 kernels for
/// its Winograd transform), not on batch, extents, pads or threads, unless
/// ConvF32PackingDependsOnExtents(p). For ConvF32WithPacked on convolutions of the same weights.
PackedConvF32 PackConvF32Weights(const ConvF32Params& p, const float* w);
/// True when the packing of p's weights on this CPU also depends on the extents, strides and
/// pads (the AVX-512 path packs 1x1 convolutions of 64+ channels in and out for its transposed
/// tiles only when they are pointwise on a small map): pack them with the extents they will run
/// at, or not ahead at all (as the evaluator, which packs before it knows them).
bool ConvF32PackingDependsOnExtents(const ConvF32Params& p);
/// Floats of scratch ConvF32WithPacked needs.
int64_t ConvF32WithPackedWorkspaceSize(const ConvF32Params& p, const PackedConvF32& packed);
/// ConvF32 with `packed` from PackConvF32Weights(p, w): the same bits, without the per-call
/// packing (a serial pass over the weights that batch-1 runs of small models feel).
void ConvF32WithPacked(const ConvF32Params& p, const float* x, const float* w,
                       const PackedConvF32& packed, const float* bias, float* y, float* workspace);

/// Floats of scratch ConvF32Im2col needs (0 for pointwise convolutions).
int64_t ConvF32Im2colWorkspaceSize(const ConvF32Params& p);

/// ConvF32's contract on any CPU: each (image chunk, group) becomes one im2col (skipped for
/// pointwise convolutions) and one GemmF32 (Eigen's sgemm, split over p.num_threads).
void ConvF32Im2col(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                   float* y, float* workspace);

/// True when this CPU can run ConvF32Im2colAvx512 (avx512f).
bool ConvF32HasAvx512();

/// Floats of scratch ConvF32Im2colAvx512 needs: packed weights plus one im2col band per thread.
int64_t ConvF32Avx512WorkspaceSize(const ConvF32Params& p);

/// ConvF32's contract with an AVX-512 GEMM microkernel (8 output channels x 32 positions per
/// register tile) over per-thread im2col bands; parallel over (image, group, band) on
/// p.num_threads threads. Packs w into the workspace first. Call only when ConvF32HasAvx512().
void ConvF32Im2colAvx512(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                         float* y, float* workspace);

/// Floats of w packed for the AVX-512 microkernel; they depend on the convolution's shape only
/// (not on batch or threads).
int64_t ConvF32Avx512PackedSize(const ConvF32Params& p);
/// ConvF32PackingDependsOnExtents for the AVX-512 path.
bool ConvF32Avx512PackingDependsOnExtents(const ConvF32Params& p);
/// Packs w ([M, C/groups, kernel]) into `packed` (ConvF32Avx512PackedSize(p) floats).
void PackConvF32Avx512(const ConvF32Params& p, const float* w, float* packed);
/// Floats of im2col bands ConvF32Im2colAvx512Packed needs (0 when it reads x in place).
int64_t ConvF32Avx512ColumnsSize(const ConvF32Params& p);
/// ConvF32Im2colAvx512 on weights packed once by PackConvF32Avx512 (a plan's Conv step packs at
/// load time); `columns` holds ConvF32Avx512ColumnsSize(p) floats. The same bits.
void ConvF32Im2colAvx512Packed(const ConvF32Params& p, const float* x, const float* packed,
                               const float* bias, float* y, float* columns);

/// True when this CPU runs ConvF32Avx2 (AVX2 and FMA) and not the AVX-512 path (no avx512f).
bool ConvF32HasAvx2();
/// Floats of scratch ConvF32Avx2 needs: packed weights plus one im2col band per thread.
int64_t ConvF32Avx2WorkspaceSize(const ConvF32Params& p);
/// ConvF32's contract with an AVX2/FMA GEMM microkernel (4 output channels x 24 positions per
/// register tile) over per-thread column bands (im2col; a pointwise convolution's x in panels);
/// parallel over (image, group, band or block of channels) on p.num_threads threads. Each output is
/// the bias plus one fused multiply-add per k in (channel, tap) order (the AVX-512 tiles' order).
/// Packs w into the workspace first. Call only when Cpu() has avx2 and fma; not for depthwise
/// convolutions.
void ConvF32Avx2(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                 float* y, float* workspace);
/// Floats of w packed for the AVX2 microkernel (shape only, as ConvF32Avx512PackedSize).
int64_t ConvF32Avx2PackedSize(const ConvF32Params& p);
/// Packs w ([M, C/groups, kernel]) into `packed` (ConvF32Avx2PackedSize(p) floats).
void PackConvF32Avx2(const ConvF32Params& p, const float* w, float* packed);
/// Floats of column bands ConvF32Avx2Packed needs (one per thread).
int64_t ConvF32Avx2ColumnsSize(const ConvF32Params& p);
/// ConvF32Avx2 on weights packed once by PackConvF32Avx2; the same bits.
void ConvF32Avx2Packed(const ConvF32Params& p, const float* x, const float* packed,
                       const float* bias, float* y, float* columns);

/// True when ConvF32DepthwiseAvx512 takes `p`: depthwise, no depth axis, stride 1 or 2 in x.
bool ConvF32DepthwiseAvx512Fits(const ConvF32Params& p);

/// ConvF32's contract for depthwise convolutions that ConvF32DepthwiseAvx512Fits: 16 outputs of
/// a row per register, accumulated over every tap before one store. Parallel over planes.
/// Call only when ConvF32HasAvx512().
void ConvF32DepthwiseAvx512(const ConvF32Params& p, const float* x, const float* w,
                            const float* bias, float* y);

/// True when ConvF32DepthwiseAvx2 takes `p`: depthwise, no depth axis, stride 1 or 2 in x, and
/// at most 256 (8-output segment, kernel column) pairs per row (680 outputs with a 3-wide kernel).
bool ConvF32DepthwiseAvx2Fits(const ConvF32Params& p);

/// ConvF32DepthwiseDirect's bits for depthwise convolutions that ConvF32DepthwiseAvx2Fits, 8
/// outputs of a row per register: each output adds the rounded products of its taps inside x in
/// (row, column) order to its bias (a multiply and an add each, as the direct path), then the
/// activation. Parallel over planes. Call only when Cpu() has avx2 and fma; ConvF32 picks it
/// where there is no AVX-512.
void ConvF32DepthwiseAvx2(const ConvF32Params& p, const float* x, const float* w, const float* bias,
                          float* y);

/// ConvF32's contract for depthwise convolutions (IsDepthwise()), computed directly without
/// im2col or sgemm, parallel over (image, channel) planes; any CPU, any geometry.
void ConvF32DepthwiseDirect(const ConvF32Params& p, const float* x, const float* w,
                            const float* bias, float* y);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_CONV_H_
