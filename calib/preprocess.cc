#include "calib/preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status.h"

namespace qcc::calib {
namespace {

// The shortest decimal text that reads back as the same float ("0.485", not "0.48500001").
std::string FloatText(float v) {
  char buf[32];
  for (int precision = 6; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;
  }
  return buf;
}

std::string ListText(const std::array<float, 3>& v, int n) {
  std::vector<std::string> parts;
  for (int i = 0; i < n; ++i) parts.push_back(FloatText(v[i]));
  return n == 1 ? parts[0] : absl::StrCat("(", absl::StrJoin(parts, ","), ")");
}

// Round half to even, like Python's round() in PaddleOCR's resize.
int RoundToMultiple(int size, int multiple) {
  const int rounded = static_cast<int>(std::nearbyint(static_cast<double>(size) / multiple));
  return std::max(rounded, 1) * multiple;
}

}  // namespace

absl::Status PreprocessSpec::Validate() const {
  auto bad = [](absl::string_view key, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("preprocessing '", key, "': ", why));
  };
  if (resize_short < 0 || resize_height < 0 || resize_width < 0) {
    return bad("resize", "sizes must be positive");
  }
  if ((resize_height > 0) != (resize_width > 0)) {
    return bad("resize", "give both height and width, or a single short-side size");
  }
  if (resize_short > 0 && resize_height > 0) {
    return bad("resize", "a short-side size and an exact size are exclusive");
  }
  if (crop_height < 0 || crop_width < 0 || (crop_height > 0) != (crop_width > 0)) {
    return bad("crop", "give a positive size N or [height, width]");
  }
  if (size_multiple < 0) return bad("size_multiple", "must be 0 (off) or positive");
  if (!std::isfinite(scale)) return bad("scale", "must be finite");
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(mean[c])) return bad("mean", "values must be finite");
    if (!std::isfinite(stddev[c]) || stddev[c] == 0.0f) {
      return bad("std", "values must be finite and non-zero");
    }
  }
  return absl::OkStatus();
}

bool PreprocessSpec::operator==(const PreprocessSpec& o) const {
  return resize_short == o.resize_short && resize_height == o.resize_height &&
         resize_width == o.resize_width && crop_height == o.crop_height &&
         crop_width == o.crop_width && size_multiple == o.size_multiple && scale == o.scale &&
         mean == o.mean && stddev == o.stddev && channel_order == o.channel_order &&
         layout == o.layout && grayscale == o.grayscale;
}

std::string PreprocessSpec::Describe() const {
  std::vector<std::string> parts;
  parts.push_back(grayscale ? "grey" : (channel_order == ChannelOrder::kRgb ? "RGB" : "BGR"));
  if (resize_short > 0) {
    parts.push_back(absl::StrCat("resize short side to ", resize_short));
  } else if (resize_height > 0) {
    parts.push_back(absl::StrCat("resize to ", resize_height, "x", resize_width));
  } else {
    parts.push_back("no resize");
  }
  if (crop_height > 0) parts.push_back(absl::StrCat("centre crop ", crop_height, "x", crop_width));
  if (size_multiple > 0) {
    parts.push_back(absl::StrCat("H,W rounded to multiples of ", size_multiple));
  }
  const int n = channels();
  const bool has_mean = std::any_of(mean.begin(), mean.begin() + n, [](float m) { return m != 0; });
  const bool has_std =
      std::any_of(stddev.begin(), stddev.begin() + n, [](float s) { return s != 1; });
  std::string math = scale == 1.0f ? "x" : absl::StrCat("x*", FloatText(scale));
  const float inverse = std::round(1.0f / scale);  // print 1/255 as "x/255"
  if (scale != 0.0f && inverse > 1.0f && inverse < 1e6f && 1.0f / inverse == scale) {
    math = absl::StrCat("x/", FloatText(inverse));
  }
  if (has_mean) math = absl::StrCat(math, " - ", ListText(mean, n));
  if (has_std)
    math = absl::StrCat(has_mean ? "(" : "", math, has_mean ? ")" : "", " / ", ListText(stddev, n));
  if (!has_mean && !has_std && scale == 1.0f) math = "raw 0..255";
  parts.push_back(math);
  parts.push_back(layout == Layout::kNchw ? "NCHW" : "NHWC");
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<PreprocessSpec> InferPreprocessSpec(const ir::TensorType& input) {
  auto not_image = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot infer image preprocessing for an input of rank ", input.rank(), ": ", why,
        "; give the preprocessing flags (--resize, --crop, --scale, ...) or provide .npy/.pb "
        "tensors"));
  };
  if (input.rank() != 4) return not_image("images need a rank-4 input (N,C,H,W or N,H,W,C)");
  const std::vector<ir::Dim>& d = *input.dims;
  PreprocessSpec spec;
  int channels = 0;
  ir::Dim h, w;
  if (d[1] == 1 || d[1] == 3) {
    channels = static_cast<int>(d[1]);
    h = d[2];
    w = d[3];
  } else if (d[3] == 1 || d[3] == 3) {
    channels = static_cast<int>(d[3]);
    spec.layout = Layout::kNhwc;
    h = d[1];
    w = d[2];
  } else {
    return not_image("no axis 1 or 3 has 1 or 3 channels");
  }
  if (channels == 1) {
    spec.grayscale = true;
  } else {
    spec.scale = 1.0f / 255.0f;
  }
  if (ir::IsKnown(h) && ir::IsKnown(w)) {
    if (h == w) {
      spec.resize_short = static_cast<int>(h);
      spec.crop_height = spec.crop_width = static_cast<int>(h);
    } else {
      spec.resize_height = static_cast<int>(h);
      spec.resize_width = static_cast<int>(w);
    }
  }
  return spec;
}

absl::StatusOr<Tensor> PreprocessImage(const Image& image, const PreprocessSpec& spec,
                                       DType dtype) {
  QCC_RETURN_IF_ERROR(spec.Validate());
  const int channels = spec.channels();
  if (image.channels != channels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "image has ", image.channels, " channels, the preprocessing needs ", channels));
  }
  Image img = image;
  if (spec.resize_short > 0) {
    // torchvision's Resize(int): the long side is int(short * long / old_short).
    const int64_t s = spec.resize_short;
    if (img.height <= img.width) {
      img = ResizeBilinear(img, static_cast<int>(s),
                           static_cast<int>(static_cast<double>(s * img.width) / img.height));
    } else {
      img = ResizeBilinear(img, static_cast<int>(static_cast<double>(s * img.height) / img.width),
                           static_cast<int>(s));
    }
  } else if (spec.resize_height > 0) {
    img = ResizeBilinear(img, spec.resize_height, spec.resize_width);
  }
  if (spec.crop_height > 0) img = CenterCrop(img, spec.crop_height, spec.crop_width);
  if (spec.size_multiple > 0) {
    img = ResizeBilinear(img, RoundToMultiple(img.height, spec.size_multiple),
                         RoundToMultiple(img.width, spec.size_multiple));
  }
  const int64_t h = img.height, w = img.width;
  const bool nchw = spec.layout == Layout::kNchw;
  Tensor out(DType::kFloat32, nchw ? Dims{1, channels, h, w} : Dims{1, h, w, channels});
  float* dst = out.data<float>();
  for (int c = 0; c < channels; ++c) {
    const int src_c = (spec.channel_order == ChannelOrder::kBgr && channels == 3) ? 2 - c : c;
    const float scale = spec.scale, mean = spec.mean[c], stddev = spec.stddev[c];
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const float v = img.at(static_cast<int>(y), static_cast<int>(x), src_c);
        const int64_t index = nchw ? (c * h + y) * w + x : (y * w + x) * channels + c;
        dst[index] = (v * scale - mean) / stddev;
      }
    }
  }
  if (dtype == DType::kFloat32 || dtype == DType::kUndefined) return out;
  return CastTensor(out, dtype);
}

}  // namespace qcc::calib
