// Resize as separable 1-D resampling: per axis, each output coordinate maps to a source
// coordinate x (coordinate transformation mode), and reads `taps` neighbours of x with weights
// (nearest: 1 tap, linear: 2, cubic: 4). The N-D result applies the axes one after the other,
// which for these separable filters equals the ONNX reference's N-D interpolation.
#ifndef QCC_KERNELS_CPU_RESIZE_H_
#define QCC_KERNELS_CPU_RESIZE_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace qcc::cpu {

/// How an output coordinate x_out maps to a source coordinate x (ONNX names).
enum class ResizeCoordMode : uint8_t {
  kHalfPixel,           // (x_out + 0.5) / scale - 0.5
  kAsymmetric,          // x_out / scale
  kPytorchHalfPixel,    // like half_pixel, but -0.5 when the output has one element
  kAlignCorners,        // x_out * (in - 1) / (scale * in - 1)
  kTfCropAndResize,     // through the roi; outside the input -> extrapolation value
  kHalfPixelSymmetric,  // half_pixel, re-centred when floor() shrank the output
  kTfHalfPixelForNn     // (x_out + 0.5) / scale (opset 11)
};
enum class ResizeFilter : uint8_t { kNearest, kLinear, kCubic };
/// Nearest's rounding of a fractional source coordinate.
enum class ResizeRounding : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

/// Everything that determines one axis's resampling.
struct ResizeAxisParams {
  int64_t in_extent = 0;
  int64_t out_extent = 0;
  double scale = 1.0;  // output/input; out_extent is floor(in_extent * scale) or the size given
  double roi_start = 0.0;
  double roi_end = 1.0;
  ResizeCoordMode coord = ResizeCoordMode::kHalfPixel;
  ResizeFilter filter = ResizeFilter::kNearest;
  ResizeRounding rounding = ResizeRounding::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;  // zero the weights of taps outside the input, renormalise
};

/// The resampling of one axis: for output j, taps index[j*taps + t] (clamped into the input)
/// with weight weight[j*taps + t]. An extrapolated j (tf_crop_and_resize outside the input)
/// has index -1 in all its taps.
struct ResizeTaps {
  int taps = 1;
  std::vector<int64_t> index;
  std::vector<float> weight;
  bool identity = false;  // output j is input j exactly: the axis can be skipped

  int64_t out_extent() const { return static_cast<int64_t>(index.size()) / taps; }
};

/// Source coordinate of output coordinate `x_out`; sets *extrapolate when tf_crop_and_resize
/// maps it outside [0, in_extent - 1].
double ResizeSourceCoord(const ResizeAxisParams& p, int64_t x_out, bool* extrapolate);

/// Builds the taps of one axis, following the ONNX reference: neighbours are the `taps`
/// integers nearest x (the left one preferred, so an integral x has weight 1 on itself), read
/// with edge clamping.
ResizeTaps MakeResizeTaps(const ResizeAxisParams& p);

/// Resamples a row-major fp32 tensor of `in_dims`: axis k with taps[k] (skipped when identity),
/// first axis first; extrapolated coordinates get `extrapolation_value`. `out` has extents
/// taps[k].out_extent().
void ResizeF32(absl::Span<const int64_t> in_dims, absl::Span<const ResizeTaps> taps,
               float extrapolation_value, const float* in, float* out);
/// The same with `scratch` of ResizeF32ScratchFloats(in_dims, taps) floats for the intermediate
/// results, so that nothing is allocated (the runtime's Resize step).
void ResizeF32(absl::Span<const int64_t> in_dims, absl::Span<const ResizeTaps> taps,
               float extrapolation_value, const float* in, float* out, float* scratch);
/// Floats of scratch ResizeF32 needs for `in_dims` and `taps`.
int64_t ResizeF32ScratchFloats(absl::Span<const int64_t> in_dims,
                               absl::Span<const ResizeTaps> taps);

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_RESIZE_H_
