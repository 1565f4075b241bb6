// int8 2-D convolution of the int8 runtime (DESIGN.md s.2): a reference implementation that IS
// the numerics contract, and fast paths that tests prove bit-identical to it
// (tests/backend_cpu/int8_conv_test.cc): AVX-512 VNNI (qconv_vnni.cc, qconv_depthwise_vnni.cc)
// and AVX2 (qconv_avx2.cc), each a register-tiled direct convolution and a depthwise kernel.
//
// Contract, for image n, output channel k of group g = k / (K / group), output position (y, x):
//   acc = bias[k] + sum_{c < C/group, r < R, s < S} w[k, c, r, s] * in(n, g * C/group + c,
//                                   y * stride_h - pad_top + r * dilation_h,
//                                   x * stride_w - pad_left + s * dilation_w)
//   out[n, k, y, x] = Requantize(acc, multiplier[k], zp_out, lo, hi)      (support/quantize.h)
// where in(...) is the raw int8 input value inside the image and `pad_value` outside it.
// - Activations: int8 NCHW, per tensor. The kernel sees raw values: with input zero point zp_in,
//   the compiler folds -zp_in * sum(w[k]) into bias[k] and passes pad_value = zp_in (a padded
//   position is a real 0), which makes the folding exact at the borders too.
// - Weights: int8 symmetric [-127, 127], [K, C/group, R, S] (ONNX order); per-tensor weights are
//   per-channel ones with equal multipliers. Bias: int32 [K] (null: 0).
// - [lo, hi] within [-128, 127]: fused ReLU/ReLU6/Clip are clamps chosen by the compiler.
// - Fused residual (a ResNet's shortcut Add): with `residual` set, each output is then
//     out[n, k, y, x] = AddValue(out[n, k, y, x], add.zp_a, add.mult_a, residual[n, k, y, x],
//                                add.zp_b, add.mult_b, add.zp_out, add.lo, add.hi)
//   (support/quantize.h), the result of the QAdd that would follow; residual has the output's
//   shape and does not overlap it.
// - Overflow: acc is the exact sum reduced modulo 2^32 (two's complement) in every path, so all
//   paths agree bit for bit on any input. The exact sum fits int32 (and so is what it means)
//   while C/group * R * S <= (2^31 - |bias|) / 16256 (|w| <= 127, |x| <= 128): about 132,000.
#ifndef QCC_KERNELS_CPU_QCONV_H_
#define QCC_KERNELS_CPU_QCONV_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "kernels/cpu/qelementwise.h"  // AddS8Params
#include "kernels/cpu/qgemm.h"         // QKernelPath, QInt8HasVnni
#include "support/conv_geometry.h"

namespace qcc::cpu {

/// Geometry and operands of one int8 convolution (contract above).
/// The extents and geometry (input [N, C, H, W], weights [K, C/group, R, S], strides, pads,
/// dilations, group, out_h(), out_w()) are support/conv_geometry.h's ConvShape.
struct QConvParams : ConvShape {
  int8_t pad_value = 0;  // raw input value of padded positions (the input zero point)
  int32_t zp_out = 0, lo = -128, hi = 127;
  const int8_t* input = nullptr;      // [N, C, H, W]
  const int8_t* weights = nullptr;    // [K, C/group, R, S] (PackQConvWeights/QConvReference)
  const int32_t* bias = nullptr;      // [K], zero-point correction folded in; null: 0
  const float* multiplier = nullptr;  // [K] requantization multipliers
  int8_t* output = nullptr;           // [N, K, out_h(), out_w()]
  const int8_t* residual = nullptr;   // [N, K, out_h(), out_w()] added by `add`; null: none
  AddS8Params add;                    // the fused Add (a: the conv's output, b: residual)
  int num_threads = 1;                // <= 1 runs on the calling thread
};

/// OK when `p` describes a convolution the kernels run: positive extents, strides and
/// dilations, non-negative pads, C and K multiples of group, an output of at least 1x1 and
/// -128 <= lo <= hi <= 127 (and add.lo <= add.hi within it when `residual` is set).
/// InvalidArgument naming the first problem otherwise.
absl::Status ValidateQConvParams(const QConvParams& p);

/// Weights of one convolution prepared once at load time for QConv; owns its buffers.
struct PackedQConvWeights {
  enum class Layout {
    kReference,
    kVnniDirect,
    kVnniDepthwise,
    kVnniPointwise,
    kAvx2Direct,
    kAvx2Depthwise,
    kVnniSmallMap,
    kAmxDirect
  };
  Layout layout = Layout::kReference;
  // The geometry packed for: QConv needs the same K, C/group, R, S, group, strides and
  // dilations (N, H, W and the pads may change between calls).
  int64_t k = 0, c_per_group = 0, r = 0, s = 0, group = 1;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  std::vector<int8_t> weights;      // copy of [K, C/group, R, S] (the reference path reads it)
  std::vector<int32_t> correction;  // [K]: -128 * sum(w[k]) mod 2^32, for the VNNI paths
  std::shared_ptr<uint8_t> packed;  // 64-byte aligned, layout-specific (qconv_vnni.cc, _avx2.cc)
};

/// Packs p.weights for QConv with p's geometry (p.input/output are not read). kFastest picks
/// the VNNI layouts when QInt8HasVnni(): depthwise (C == group) when its window fits, pointwise
/// for a 1x1 convolution (stride 1, no pads, one group, K >= 16) on <= 64 positions, else the
/// direct one; else the AVX2 layouts when QInt8HasAvx2(): depthwise when C == group, else
/// direct. kAvx2 picks the AVX2 layouts when QInt8HasAvx2(). Call only for params that
/// ValidateQConvParams accepts.
PackedQConvWeights PackQConvWeights(const QConvParams& p, QKernelPath path = QKernelPath::kFastest);

/// Bytes of scratch QConv needs for `p` with weights `w` (p.num_threads per-thread buffers).
int64_t QConvWorkspaceBytes(const QConvParams& p, const PackedQConvWeights& w);

/// The contract on p.input, weights `w` (p.weights is ignored), p.bias and p.multiplier,
/// written to p.output. `workspace` holds QConvWorkspaceBytes(p, w) bytes (any alignment).
/// No allocation; parallel over p.num_threads threads of the pool (thread_pool.h).
void QConv(const QConvParams& p, const PackedQConvWeights& w, void* workspace);

/// The contract itself, in plain scalar C++ over p.weights (any CPU, no workspace); parallel
/// over (image, output channel) planes.
void QConvReference(const QConvParams& p);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_QCONV_H_
