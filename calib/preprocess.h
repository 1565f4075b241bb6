// Image preprocessing for calibration data: what a model expects its input pixels to look like.
//
// Order of operations on a decoded 8-bit image (RGB, or grey with `grayscale`):
//   1. resize: short side to `resize_short` (long side int(short * long / old_short), like
//      torchvision), or to exactly resize_height x resize_width; bilinear (see image.h);
//   2. centre crop to crop_height x crop_width;
//   3. round H and W to the nearest multiple of `size_multiple` (at least one multiple) by another
//      bilinear resize, as PaddleOCR's detector does;
//   4. channel order (RGB or BGR), then per output channel c: y = (x * scale - mean[c]) / stddev[c]
//      in fp32, where mean/std are given in the output channel order;
//   5. layout NCHW or NHWC with a leading batch of 1, cast to the model input's dtype.
#ifndef QCC_CALIB_PREPROCESS_H_
#define QCC_CALIB_PREPROCESS_H_

#include <array>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "calib/image.h"
#include "ir/types.h"
#include "support/tensor.h"

namespace qcc::calib {

/// The order of the three colour channels in the model input.
enum class ChannelOrder { kRgb, kBgr };
/// Channels first (NCHW) or last (NHWC).
enum class Layout { kNchw, kNhwc };

/// The preprocessing of image files into a model input. Zero sizes mean "leave as is".
struct PreprocessSpec {
  int resize_short = 0;   ///< Short side after resizing (aspect ratio kept).
  int resize_height = 0;  ///< Exact size after resizing (both or neither; not with resize_short).
  int resize_width = 0;
  int crop_height = 0;  ///< Centre crop (both or neither).
  int crop_width = 0;
  int size_multiple = 0;  ///< Round H and W to a multiple of this after the crop; 0: no.
  float scale = 1.0f;     ///< Multiplies the raw 0..255 pixel values.
  std::array<float, 3> mean = {0.0f, 0.0f, 0.0f};    ///< Per output channel (grey uses [0]).
  std::array<float, 3> stddev = {1.0f, 1.0f, 1.0f};  ///< JSON key "std".
  ChannelOrder channel_order = ChannelOrder::kRgb;
  Layout layout = Layout::kNchw;
  bool grayscale = false;  ///< One grey channel instead of three colour ones.

  int channels() const { return grayscale ? 1 : 3; }
  /// InvalidArgument naming the field when the spec is inconsistent (negative sizes, half a
  /// size, both resize forms, std 0, non-finite numbers).
  absl::Status Validate() const;
  /// JSON object with every field (keys as FromJson reads them), pretty-printed, sorted keys.
  std::string ToJson() const;
  /// One line for users, e.g. "resize short side 256, centre crop 224x224, BGR, x*1 - mean
  /// (104,117,123), NCHW".
  std::string Describe() const;
  bool operator==(const PreprocessSpec& o) const;
};

/// Parses a JSON object: keys resize (N: short side, or [H,W] exact), crop (N or [H,W]),
/// size_multiple, scale, mean and std (1 or 3 numbers), channel_order ("rgb"|"bgr"), layout
/// ("nchw"|"nhwc"), grayscale (bool). Missing keys keep their defaults; unknown keys, wrong types
/// and bad values are InvalidArgument errors naming the key.
absl::StatusOr<PreprocessSpec> PreprocessSpecFromJson(absl::string_view text);
/// Reads and parses a JSON file; errors name the file.
absl::StatusOr<PreprocessSpec> PreprocessSpecFromJsonFile(const std::string& path);

/// Sets one field from a command-line flag: `key` is a JSON key (dashes allowed for
/// underscores: "channel-order") and `value` its text: resize "256" or "48x192", crop "224" or
/// "HxW", mean/std "a,b,c" or "a", scale "0.0039", channel-order "rgb|bgr", layout "nchw|nhwc",
/// grayscale "" / "true" / "false", size-multiple "32". Errors name the flag.
absl::Status ApplyPreprocessFlag(absl::string_view key, absl::string_view value,
                                 PreprocessSpec* spec);

/// The spec to use when the user gives none, from the model input type: rank 4 with 1 or 3
/// channels at axis 1 (NCHW) or axis 3 (NHWC). 1 channel: grey, raw 0..255 (like MNIST); 3: RGB
/// scaled by 1/255. Known H and W: a square input is reached by resizing the short side and
/// centre cropping, a non-square one by resizing to exactly H x W; unknown H/W: no resizing.
/// InvalidArgument (saying to pass flags or use .npy/.pb) when the type does not look like an
/// image.
absl::StatusOr<PreprocessSpec> InferPreprocessSpec(const ir::TensorType& input);

/// Applies steps 1-5 above to a decoded image (1 channel when spec.grayscale, else 3 RGB) and
/// returns [1,C,H,W] or [1,H,W,C] in `dtype` (fp32 values cast with ONNX Cast rules).
absl::StatusOr<Tensor> PreprocessImage(const Image& image, const PreprocessSpec& spec, DType dtype);

}  // namespace qcc::calib

#endif  // QCC_CALIB_PREPROCESS_H_
