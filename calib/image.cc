#include "calib/image.h"

#include <stb_image.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace qcc::calib {

absl::StatusOr<Image> DecodeImageFile(const std::string& path, int channels) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read image '", path, "'"));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("cannot read image '", path, "'"));
  return DecodeImage(bytes.str(), channels, path);
}

absl::StatusOr<Image> DecodeImage(absl::string_view bytes, int channels, absl::string_view source) {
  if (channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("images decode to 1 or 3 channels, not ", channels));
  }
  auto failure = [&](absl::string_view reason) {
    return absl::InvalidArgumentError(absl::StrCat("cannot decode image '", source, "': ", reason));
  };
  if (bytes.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
    return failure("the file is larger than 2 GiB");
  }
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int size = static_cast<int>(bytes.size());
  int width = 0, height = 0, in_file = 0;
  if (!stbi_info_from_memory(data, size, &width, &height, &in_file)) {
    const char* reason = stbi_failure_reason();
    return failure(reason ? reason : "unknown image type");
  }
  if (static_cast<int64_t>(width) * height > kMaxImagePixels) {
    return failure(absl::StrCat("its header claims ", width, " x ", height,
                                " pixels, more than the 2^27 an image may have"));
  }
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(data, size, &width, &height, &in_file, channels), stbi_image_free);
  if (pixels == nullptr) {
    const char* reason = stbi_failure_reason();
    return failure(reason ? reason : "unknown error");
  }
  Image image;
  image.height = height;
  image.width = width;
  image.channels = channels;
  image.pixels.assign(pixels.get(), pixels.get() + static_cast<size_t>(width) * height * channels);
  return image;
}

namespace {

// Source taps of one output coordinate: value = (1 - frac) * src[i0] + frac * src[i1].
struct Tap {
  int i0;
  int i1;
  float frac;
};

// Half-pixel centres: out pixel d covers in coordinate (d + 0.5) * in / out - 0.5; positions
// before the first or after the last pixel centre clamp to the edge pixel.
std::vector<Tap> Taps(int in, int out) {
  std::vector<Tap> taps(out);
  const double ratio = static_cast<double>(in) / out;
  for (int d = 0; d < out; ++d) {
    double src = (d + 0.5) * ratio - 0.5;
    src = std::clamp(src, 0.0, static_cast<double>(in - 1));
    const int i0 = static_cast<int>(std::floor(src));
    const int i1 = std::min(i0 + 1, in - 1);
    taps[d] = Tap{i0, i1, static_cast<float>(src - i0)};
  }
  return taps;
}

}  // namespace

Image ResizeBilinear(const Image& in, int out_height, int out_width) {
  if (in.height == out_height && in.width == out_width) return in;
  const std::vector<Tap> ty = Taps(in.height, out_height);
  const std::vector<Tap> tx = Taps(in.width, out_width);
  Image out;
  out.height = out_height;
  out.width = out_width;
  out.channels = in.channels;
  out.pixels.resize(static_cast<size_t>(out_height) * out_width * in.channels);
  const int c_count = in.channels;
  for (int y = 0; y < out_height; ++y) {
    const Tap& a = ty[y];
    for (int x = 0; x < out_width; ++x) {
      const Tap& b = tx[x];
      for (int c = 0; c < c_count; ++c) {
        const float top = (1.0f - b.frac) * in.at(a.i0, b.i0, c) + b.frac * in.at(a.i0, b.i1, c);
        const float bottom = (1.0f - b.frac) * in.at(a.i1, b.i0, c) + b.frac * in.at(a.i1, b.i1, c);
        const float v = (1.0f - a.frac) * top + a.frac * bottom;
        out.pixels[(static_cast<size_t>(y) * out_width + x) * c_count + c] =
            static_cast<uint8_t>(std::clamp(std::nearbyint(v), 0.0f, 255.0f));
      }
    }
  }
  return out;
}

Image CenterCrop(const Image& in, int height, int width) {
  if (in.height == height && in.width == width) return in;
  // std::nearbyint rounds half to even, like Python's round() in torchvision.
  const int top = static_cast<int>(std::nearbyint((in.height - height) / 2.0));
  const int left = static_cast<int>(std::nearbyint((in.width - width) / 2.0));
  Image out;
  out.height = height;
  out.width = width;
  out.channels = in.channels;
  out.pixels.assign(static_cast<size_t>(height) * width * in.channels, 0);
  for (int y = 0; y < height; ++y) {
    const int sy = y + top;
    if (sy < 0 || sy >= in.height) continue;
    for (int x = 0; x < width; ++x) {
      const int sx = x + left;
      if (sx < 0 || sx >= in.width) continue;
      for (int c = 0; c < in.channels; ++c) {
        out.pixels[(static_cast<size_t>(y) * width + x) * in.channels + c] = in.at(sy, sx, c);
      }
    }
  }
  return out;
}

}  // namespace qcc::calib
