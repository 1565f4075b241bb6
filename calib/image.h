// 8-bit images for the calibration readers: decoding (stb_image), bilinear resizing, cropping.
#ifndef QCC_CALIB_IMAGE_H_
#define QCC_CALIB_IMAGE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace qcc::calib {

/// An interleaved 8-bit image: pixel (y, x) channel c is pixels[(y * width + x) * channels + c].
/// Colour images are RGB, in that order.
struct Image {
  int height = 0;
  int width = 0;
  int channels = 0;
  std::vector<uint8_t> pixels;

  uint8_t at(int y, int x, int c) const {
    return pixels[(static_cast<size_t>(y) * width + x) * channels + c];
  }
};

/// The most pixels an image may have (2^27, e.g. 16384 x 8192): a header claiming more is refused
/// before anything is allocated for it (a hostile PNG can claim 65535 x 65535).
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 27;

/// Decodes a JPEG (libjpeg-turbo) or PNG (libpng) file into `channels` channels: 3 gives RGB
/// (grey images are replicated, palettes expanded, alpha dropped, 16-bit samples truncated to
/// their high byte), 1 gives grey (the decoded Y plane for JPEG; (77 R + 150 G + 29 B) >> 8 for a
/// colour PNG). InvalidArgument naming the file and the decoder's reason when the file cannot be
/// read or decoded, is neither JPEG nor PNG, is CMYK, has more than 500 progressive scans, or is
/// larger than kMaxImagePixels (checked from the header, before anything is allocated).
absl::StatusOr<Image> DecodeImageFile(const std::string& path, int channels);

/// The same for the bytes of an image file; `source` names it in errors.
absl::StatusOr<Image> DecodeImage(absl::string_view bytes, int channels, absl::string_view source);

/// Resizes to out_height x out_width with bilinear interpolation on half-pixel centres
/// (src = (dst + 0.5) * in / out - 0.5, clamped to the edge; no antialiasing when shrinking),
/// rounding to the nearest 8-bit value. The formula is OpenCV's INTER_LINEAR, but computed in
/// float rather than OpenCV's fixed point, and PIL antialiases when shrinking: results may differ
/// from either library by a grey level or more (not bit-identical).
Image ResizeBilinear(const Image& in, int out_height, int out_width);

/// The centre height x width window of `in` (top = round_half_even((H - height) / 2), like
/// torchvision's CenterCrop); parts of the window outside the image are zero.
Image CenterCrop(const Image& in, int height, int width);

}  // namespace qcc::calib

#endif  // QCC_CALIB_IMAGE_H_
