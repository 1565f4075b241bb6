// The geometry of a 2-D convolution, written once for every layer that needs it: the plan's step
// parameters (runtime/steps.h, serialised field by field in Visit's order), the CPU int8 kernels
// (kernels/cpu/qconv.h QConvParams) and the CUDA kernel bodies (kernels/cuda/conv_bodies.h
// ConvDims) all derive from these, so a conv's geometry is copied by one assignment, not nine.
// Plain data: usable on the host and, through the CUDA bodies, on the device. (The fp32 CPU conv,
// kernels/cpu/conv.h ConvF32Params, is N-dimensional, for the evaluator's 1-D and 3-D
// convolutions, and keeps its own arrays; a plan's 2-D geometry goes into them in one call,
// ConvF32Params::SetGeometry2d.)
#ifndef QCC_SUPPORT_CONV_GEOMETRY_H_
#define QCC_SUPPORT_CONV_GEOMETRY_H_

#include <cstdint>

namespace qcc {

/// Strides, pads (begin and end), dilations and group count of a 2-D convolution.
struct ConvGeometry {
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t group = 1;

  /// The plan format's field order (runtime/plan_format.h): changing it changes every plan.
  template <typename V>
  void Visit(V& v) {
    v.Int(stride_h);
    v.Int(stride_w);
    v.Int(pad_top);
    v.Int(pad_left);
    v.Int(pad_bottom);
    v.Int(pad_right);
    v.Int(dilation_h);
    v.Int(dilation_w);
    v.Int(group);
  }
};

/// A 2-D convolution with its extents: input [n, c, h, w] NCHW, weights [k, c / group, r, s].
struct ConvShape : ConvGeometry {
  int64_t n = 1, c = 1, h = 1, w = 1;
  int64_t k = 1, r = 1, s = 1;

  /// Output extents: (h + pads - dilation * (r - 1) - 1) / stride + 1, likewise for w.
  int64_t out_h() const {
    return (h + pad_top + pad_bottom - dilation_h * (r - 1) - 1) / stride_h + 1;
  }
  int64_t out_w() const {
    return (w + pad_left + pad_right - dilation_w * (s - 1) - 1) / stride_w + 1;
  }
  /// The geometry part, for assigning it from a step's parameters: shape.geometry() = g.
  ConvGeometry& geometry() { return *this; }
  const ConvGeometry& geometry() const { return *this; }
};

}  // namespace qcc

#endif  // QCC_SUPPORT_CONV_GEOMETRY_H_
