// Sliding-window geometry shared by Conv, ConvTranspose and the pools: the one place where
// kernel_shape/strides/dilations/pads/auto_pad/ceil_mode become output extents and effective pads.
// The shape functions (ir/shape_fns/nn.cc) and the CPU adapters (backend_cpu/ops/nn_*.cc) both
// call it, so the shape a node is given and the pads its kernel uses cannot disagree.
#ifndef QCC_IR_SHAPE_FNS_NN_WINDOW_H_
#define QCC_IR_SHAPE_FNS_NN_WINDOW_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/attrs.h"

namespace qcc::ir {

/// Window attributes normalised to one entry per spatial axis, defaults filled in.
struct WindowSpec {
  AutoPad auto_pad = AutoPad::kNotSet;
  std::vector<int64_t> kernel, strides, dilations, pads_begin, pads_end;
  bool ceil_mode = false;

  int64_t rank() const { return static_cast<int64_t>(kernel.size()); }
  /// Extent the dilated kernel covers on `axis`: (k - 1) * d + 1.
  int64_t EffectiveKernel(int64_t axis) const { return (kernel[axis] - 1) * dilations[axis] + 1; }
};

/// Validates window attributes for `spatial_rank` axes (sizes match, kernel/strides/dilations
/// >= 1, pads >= 0) and fills defaults; `kernel` must already be known. Errors are
/// InvalidArgument without the node name (callers add it).
absl::StatusOr<WindowSpec> MakeWindowSpec(int64_t spatial_rank, const Ints& kernel,
                                          const Ints& strides, const Ints& dilations,
                                          const Ints& pads, AutoPad auto_pad, bool ceil_mode);

/// One spatial axis of a window op for a known input extent: output extent and the pads the
/// kernel must apply (auto_pad resolved).
struct WindowAxis {
  int64_t out = 0;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};

/// Conv and pools: out = floor-or-ceil((in + pads - eff_k) / s) + 1 for NOTSET (with ceil_mode a
/// last window starting in the end padding is dropped), ceil(in / s) for SAME_*, and
/// ceil((in - eff_k + 1) / s) for VALID. Error when the window is larger than the padded input.
absl::StatusOr<WindowAxis> ForwardWindowAxis(const WindowSpec& spec, int64_t axis, int64_t in);

/// ConvTranspose: out = s * (in - 1) + output_padding + eff_k - pads for NOTSET, in * s for
/// SAME_*, or `requested_out` (>= 0) when output_shape is given, with pads derived from it as
/// the ONNX spec says (SAME_UPPER puts the odd pixel at the end, otherwise at the beginning).
absl::StatusOr<WindowAxis> TransposedWindowAxis(const WindowSpec& spec, int64_t axis, int64_t in,
                                                int64_t output_padding, int64_t requested_out);

}  // namespace qcc::ir

#endif  // QCC_IR_SHAPE_FNS_NN_WINDOW_H_
