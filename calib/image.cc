#include "calib/image.h"

// Decoders: libjpeg-turbo (Debian libjpeg62-turbo-dev) and libpng (libpng-dev), both maintained
// with security updates and fuzzed continuously upstream (OSS-Fuzz). stb_image 2.27, which
// Debian packages, writes past a Huffman table on a crafted JPEG (found by the image fuzzer).
#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace qcc::calib {
namespace {

/// Progressive JPEG scans a decode may take: a crafted file can hold thousands of tiny scans,
/// each a pass over the whole image (libjpeg-turbo's own TJFLAG_LIMITSCANS uses 500).
constexpr int kMaxJpegScans = 500;

/// What a decoder writes: the pixels and, on failure, the reason. Plain data, so that a longjmp
/// out of libjpeg or libpng skips no destructor.
struct Decoded {
  std::vector<uint8_t>* pixels = nullptr;
  int width = 0;
  int height = 0;
  char reason[JMSG_LENGTH_MAX + 128] = {};
};

void SetReason(Decoded& out, const char* reason) {
  std::snprintf(out.reason, sizeof(out.reason), "%s", reason);
}

bool CheckPixels(Decoded& out, uint64_t width, uint64_t height) {
  if (width * height > static_cast<uint64_t>(kMaxImagePixels)) {
    std::snprintf(out.reason, sizeof(out.reason),
                  "its header claims %llu x %llu pixels, more than the 2^27 an image may have",
                  static_cast<unsigned long long>(width), static_cast<unsigned long long>(height));
    return false;
  }
  return true;
}

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  Decoded* out;
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  char message[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, message);
  SetReason(*err->out, message);
  std::longjmp(err->jump, 1);
}

// Corrupt-data warnings (extraneous bytes, a premature end) are not printed: the image decodes
// as libjpeg recovers it, as other tools that read real data sets do.
void JpegSilence(j_common_ptr, int) {}

void JpegLimitScans(j_common_ptr cinfo) {
  if (cinfo->is_decompressor &&
      reinterpret_cast<j_decompress_ptr>(cinfo)->input_scan_number > kMaxJpegScans) {
    auto* err = reinterpret_cast<JpegError*>(cinfo->err);
    std::snprintf(err->out->reason, sizeof(err->out->reason), "more than %d progressive scans",
                  kMaxJpegScans);
    std::longjmp(err->jump, 1);
  }
}

/// JPEG to RGB (grey replicated) or to its Y plane. No C++ object with a destructor lives in
/// this frame: libjpeg's errors longjmp back to it.
bool DecodeJpeg(const uint8_t* data, size_t size, int channels, Decoded& out) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  jpeg_progress_mgr progress;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.emit_message = JpegSilence;
  err.out = &out;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  progress.progress_monitor = JpegLimitScans;
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  if (!CheckPixels(out, cinfo.image_width, cinfo.image_height)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    SetReason(out, "CMYK JPEGs are not supported; convert the image to RGB");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  out.width = static_cast<int>(cinfo.output_width);
  out.height = static_cast<int>(cinfo.output_height);
  const size_t stride = static_cast<size_t>(out.width) * channels;
  out.pixels->resize(stride * out.height);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out.pixels->data() + stride * cinfo.output_scanline;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

struct PngSource {
  const uint8_t* data;
  size_t size;
  size_t offset;
};

void PngRead(png_structp png, png_bytep dst, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->offset) png_error(png, "the file ends early");
  std::memcpy(dst, src->data + src->offset, n);
  src->offset += n;
}

void PngError(png_structp png, png_const_charp message) {
  SetReason(*static_cast<Decoded*>(png_get_error_ptr(png)), message);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}

/// PNG to 8-bit RGB (grey replicated, palette expanded, alpha dropped, 16 bits truncated to
/// their high byte) or to grey, converting colour as (77 R + 150 G + 29 B) >> 8. No C++ object
/// with a destructor lives in this frame: libpng's errors longjmp back to it.
bool DecodePng(const uint8_t* data, size_t size, int channels, Decoded& out) {
  PngSource src{data, size, 0};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &out, PngError, PngWarning);
  if (png == nullptr) {
    SetReason(out, "out of memory");
    return false;
  }
  png_infop info = png_create_info_struct(png);
  if (info == nullptr || setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &src, PngRead);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info);
  const png_uint_32 height = png_get_image_height(png, info);
  if (!CheckPixels(out, width, height)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_packing(png);
  png_set_palette_to_rgb(png);
  png_set_expand_gray_1_2_4_to_8(png);
  const png_byte color = png_get_color_type(png, info);
  const bool colour = (color & PNG_COLOR_MASK_COLOR) != 0;
  if (channels == 3 && !colour) png_set_gray_to_rgb(png);
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const size_t file_channels = png_get_channels(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  if (row_bytes != static_cast<size_t>(width) * file_channels ||
      (file_channels != 1 && file_channels != 3)) {
    SetReason(out, "unexpected pixel layout after conversion to 8 bits");
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  out.width = static_cast<int>(width);
  out.height = static_cast<int>(height);
  out.pixels->resize(row_bytes * height);
  for (int pass = 0; pass < passes; ++pass) {
    for (png_uint_32 y = 0; y < height; ++y) {
      png_read_row(png, out.pixels->data() + row_bytes * y, nullptr);
    }
  }
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  if (channels == 1 && file_channels == 3) {
    std::vector<uint8_t>& px = *out.pixels;
    const size_t n = static_cast<size_t>(width) * height;
    for (size_t i = 0; i < n; ++i) {
      px[i] =
          static_cast<uint8_t>((77 * px[3 * i] + 150 * px[3 * i + 1] + 29 * px[3 * i + 2]) >> 8);
    }
    px.resize(n);
  }
  return true;
}

}  // namespace

absl::StatusOr<Image> DecodeImageFile(const std::string& path, int channels) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read image '", path, "'"));
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat("cannot read image '", path, "'"));
  return DecodeImage(bytes, channels, path);
}

absl::StatusOr<Image> DecodeImage(absl::string_view bytes, int channels, absl::string_view source) {
  if (channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("images decode to 1 or 3 channels, not ", channels));
  }
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  Image image;
  Decoded out;
  out.pixels = &image.pixels;
  bool ok = false;
  if (bytes.size() >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
    ok = DecodeJpeg(data, bytes.size(), channels, out);
  } else if (bytes.size() >= 8 && png_sig_cmp(data, 0, 8) == 0) {
    ok = DecodePng(data, bytes.size(), channels, out);
  } else {
    SetReason(out, "not a JPEG or PNG file");
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot decode image '", source, "': ", out.reason));
  }
  image.height = out.height;
  image.width = out.width;
  image.channels = channels;
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
  if (top >= 0 && left >= 0 && top + height <= in.height && left + width <= in.width) {
    // Inside the image (the usual crop): each output row is a run of the input's.
    const size_t row = static_cast<size_t>(width) * in.channels;
    for (int y = 0; y < height; ++y) {
      std::memcpy(out.pixels.data() + y * row,
                  &in.pixels[(static_cast<size_t>(y + top) * in.width + left) * in.channels], row);
    }
    return out;
  }
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
