// Image decoding, bilinear resize, centre crop and the preprocessing math on tiny images.
#include <stb/stb_image_write.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "calib/image.h"
#include "calib/preprocess.h"
#include "gtest/gtest.h"
#include "support/float16.h"
#include "tests/testing/temp_dir.h"

namespace qcc::calib {
namespace {

std::string TempDir() { return qcc::testing::NewTestDir("qcc_data_image"); }

Image MakeImage(int h, int w, int c, std::vector<uint8_t> pixels) {
  return Image{h, w, c, std::move(pixels)};
}

// 2x2 RGB: (10,20,30) (40,50,60) / (70,80,90) (100,110,120).
const std::vector<uint8_t> kRgb2x2 = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120};

TEST(CalibDataImage, DecodesPngExactly) {
  const std::string path = TempDir() + "/a.png";
  ASSERT_TRUE(stbi_write_png(path.c_str(), 2, 2, 3, kRgb2x2.data(), 2 * 3));
  absl::StatusOr<Image> img = DecodeImageFile(path, 3);
  ASSERT_TRUE(img.ok()) << img.status();
  EXPECT_EQ(img->height, 2);
  EXPECT_EQ(img->width, 2);
  EXPECT_EQ(img->pixels, kRgb2x2);
  // As grey: (77 R + 150 G + 29 B) >> 8 (stb_image's formula, kept when decoding moved to libpng).
  absl::StatusOr<Image> grey = DecodeImageFile(path, 1);
  ASSERT_TRUE(grey.ok()) << grey.status();
  for (int p = 0; p < 4; ++p) {
    const int r = kRgb2x2[3 * p], g = kRgb2x2[3 * p + 1], b = kRgb2x2[3 * p + 2];
    EXPECT_EQ(grey->pixels[p], (77 * r + 150 * g + 29 * b) >> 8) << p;
  }
}

TEST(CalibDataImage, GreyPngReplicatesToRgb) {
  const std::string path = TempDir() + "/g.png";
  const std::vector<uint8_t> grey = {0, 255, 17, 128};
  ASSERT_TRUE(stbi_write_png(path.c_str(), 2, 2, 1, grey.data(), 2));
  absl::StatusOr<Image> img = DecodeImageFile(path, 3);
  ASSERT_TRUE(img.ok()) << img.status();
  ASSERT_EQ(img->channels, 3);
  for (int p = 0; p < 4; ++p) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(img->pixels[3 * p + c], grey[p]);
  }
}

TEST(CalibDataImage, DecodesFlatJpegClosely) {
  const std::string path = TempDir() + "/f.jpg";
  std::vector<uint8_t> flat(16 * 16 * 3);
  for (size_t i = 0; i < flat.size(); i += 3) {
    flat[i] = 200;
    flat[i + 1] = 100;
    flat[i + 2] = 50;
  }
  ASSERT_TRUE(stbi_write_jpg(path.c_str(), 16, 16, 3, flat.data(), 100));
  absl::StatusOr<Image> img = DecodeImageFile(path, 3);
  ASSERT_TRUE(img.ok()) << img.status();
  for (size_t i = 0; i < flat.size(); ++i) EXPECT_NEAR(img->pixels[i], flat[i], 3) << i;
}

TEST(CalibDataImage, UndecodableFileIsNamed) {
  const std::string path = TempDir() + "/broken.png";
  std::ofstream(path) << "this is not a png";
  absl::StatusOr<Image> img = DecodeImageFile(path, 3);
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(img.status().message().find(path), std::string::npos) << img.status();
  EXPECT_FALSE(DecodeImageFile(TempDir() + "/missing.png", 3).ok());
}

void AppendTo(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), size);
}

void ExpectRefusedAsTooLarge(const std::string& bytes, const std::string& name) {
  absl::StatusOr<Image> bomb = DecodeImage(bytes, 3, name);
  ASSERT_FALSE(bomb.ok());
  EXPECT_EQ(bomb.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bomb.status().message().find(name), std::string::npos) << bomb.status();
  EXPECT_NE(bomb.status().message().find("16384 x 16384"), std::string::npos) << bomb.status();
}

TEST(CalibDataImage, HeaderClaimingTooManyPixelsIsRefusedBeforeDecoding) {
  // Real 2x2 images whose headers are rewritten to claim 16384 x 16384 (268 M pixels, 805 MB as
  // RGB): refused from the header alone, before the pixels are allocated.
  std::string png;
  ASSERT_TRUE(stbi_write_png_to_func(AppendTo, &png, 2, 2, 3, kRgb2x2.data(), 2 * 3));
  absl::StatusOr<Image> small = DecodeImage(png, 3, "small.png");
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->width, 2);
  // PNG: IHDR's width and height (bytes 16..23, big-endian), then its CRC (bytes 29..32) over
  // the chunk type and data (bytes 12..28).
  ASSERT_GT(png.size(), 33u);
  for (int i = 16; i < 24; ++i) png[i] = (i % 4 == 2) ? '\x40' : '\0';
  const uLong crc = crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17);
  for (int i = 0; i < 4; ++i) png[29 + i] = static_cast<char>((crc >> (24 - 8 * i)) & 0xFF);
  ExpectRefusedAsTooLarge(png, "bomb.png");

  // JPEG: the frame header (FF C0, length, precision, then height and width, big-endian).
  std::string jpg;
  ASSERT_TRUE(stbi_write_jpg_to_func(AppendTo, &jpg, 2, 2, 3, kRgb2x2.data(), 90));
  ASSERT_TRUE(DecodeImage(jpg, 3, "small.jpg").ok());
  const size_t sof = jpg.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  for (size_t i = sof + 5; i < sof + 9; ++i) jpg[i] = (i - sof) % 2 == 1 ? '\x40' : '\0';
  ExpectRefusedAsTooLarge(jpg, "bomb.jpg");
}

TEST(CalibDataImage, OtherFormatsAndCorruptHuffmanTablesAreCleanErrors) {
  // A BMP is neither JPEG nor PNG.
  absl::StatusOr<Image> bmp = DecodeImage(std::string("BM") + std::string(60, '\0'), 3, "a.bmp");
  ASSERT_FALSE(bmp.ok());
  EXPECT_NE(bmp.status().message().find("not a JPEG or PNG"), std::string::npos) << bmp.status();
  // The JPEG the image fuzzer found (tests/fuzz/regressions/image/): a Huffman table whose 16
  // code counts sum past 256 made stb_image 2.27 write past its table.
  std::ifstream in(
      std::string(QCC_SOURCE_DIR) + "/tests/fuzz/regressions/image/dht-counts-over-256.jpg",
      std::ios::binary);
  ASSERT_TRUE(in);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  absl::StatusOr<Image> dht = DecodeImage(bytes, 3, "dht.jpg");
  ASSERT_FALSE(dht.ok());
  EXPECT_NE(dht.status().message().find("dht.jpg"), std::string::npos) << dht.status();
}

TEST(CalibDataImage, BilinearUpscaleHalfPixelCentres) {
  // 2 -> 3: source positions (d + 0.5) * 2/3 - 0.5 = -1/6 (clamped to 0), 0.5, 7/6 (clamped to 1).
  const Image in = MakeImage(2, 2, 1, {0, 100, 200, 40});
  const Image out = ResizeBilinear(in, 3, 3);
  EXPECT_EQ(out.pixels, (std::vector<uint8_t>{0, 50, 100, 100, 85, 70, 200, 120, 40}));
  // 2 -> 4 along a row: positions 0 (clamped), 0.25, 0.75, 1 (clamped).
  const Image row = ResizeBilinear(MakeImage(1, 2, 1, {0, 100}), 1, 4);
  EXPECT_EQ(row.pixels, (std::vector<uint8_t>{0, 25, 75, 100}));
}

TEST(CalibDataImage, BilinearDownscaleAndRounding) {
  // 4 -> 2: positions 0.5 and 2.5, the means of neighbour pairs; 12.5 rounds to even 12.
  const Image out = ResizeBilinear(MakeImage(1, 4, 1, {10, 20, 30, 40}), 1, 2);
  EXPECT_EQ(out.pixels, (std::vector<uint8_t>{15, 35}));
  const Image half = ResizeBilinear(MakeImage(1, 4, 1, {10, 15, 0, 1}), 1, 2);
  EXPECT_EQ(half.pixels, (std::vector<uint8_t>{12, 0}));  // 12.5 -> 12, 0.5 -> 0
  // Channels are resized independently.
  const Image rgb = ResizeBilinear(MakeImage(1, 2, 3, {0, 10, 20, 100, 110, 120}), 1, 1);
  EXPECT_EQ(rgb.pixels, (std::vector<uint8_t>{50, 60, 70}));
}

TEST(CalibDataImage, CentreCropRoundsHalfToEvenAndPads) {
  std::vector<uint8_t> px(4 * 5);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i);
  // top = round(1) = 1, left = round(1.5) = 2.
  const Image crop = CenterCrop(MakeImage(4, 5, 1, px), 2, 2);
  EXPECT_EQ(crop.pixels, (std::vector<uint8_t>{7, 8, 12, 13}));
  // Larger than the image: zero border (top = left = -1).
  const Image pad = CenterCrop(MakeImage(2, 2, 1, {1, 2, 3, 4}), 4, 4);
  EXPECT_EQ(pad.pixels, (std::vector<uint8_t>{0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0}));
}

TEST(CalibDataPreprocess, NormalisesNchwRgb) {
  PreprocessSpec spec;
  spec.scale = 1.0f / 255.0f;
  spec.mean = {0.485f, 0.456f, 0.406f};
  spec.stddev = {0.229f, 0.224f, 0.225f};
  absl::StatusOr<Tensor> t = PreprocessImage(MakeImage(2, 2, 3, kRgb2x2), spec, DType::kFloat32);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->dims(), (Dims{1, 3, 2, 2}));
  for (int c = 0; c < 3; ++c) {
    for (int p = 0; p < 4; ++p) {
      const float x = kRgb2x2[3 * p + c];
      EXPECT_EQ(t->data<float>()[c * 4 + p], (x * (1.0f / 255.0f) - spec.mean[c]) / spec.stddev[c]);
    }
  }
}

TEST(CalibDataPreprocess, BgrNhwcMeanPerOutputChannel) {
  // SqueezeNet's: BGR, 0..255 minus (104, 117, 123) given in B, G, R order.
  PreprocessSpec spec;
  spec.channel_order = ChannelOrder::kBgr;
  spec.layout = Layout::kNhwc;
  spec.mean = {104, 117, 123};
  absl::StatusOr<Tensor> t = PreprocessImage(MakeImage(2, 2, 3, kRgb2x2), spec, DType::kFloat32);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->dims(), (Dims{1, 2, 2, 3}));
  const float* d = t->data<float>();
  // Pixel 1 is (R,G,B) = (40,50,60): output (B-104, G-117, R-123).
  EXPECT_EQ(d[3], 60 - 104);
  EXPECT_EQ(d[4], 50 - 117);
  EXPECT_EQ(d[5], 40 - 123);
  EXPECT_EQ(d[9], 120 - 104);  // pixel 3, B
}

TEST(CalibDataPreprocess, GrayscaleRawAndFloat16) {
  PreprocessSpec spec;
  spec.grayscale = true;
  absl::StatusOr<Tensor> t =
      PreprocessImage(MakeImage(2, 2, 1, {0, 1, 254, 255}), spec, DType::kFloat32);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dims(), (Dims{1, 1, 2, 2}));
  EXPECT_EQ(t->ToFloatVector(), (std::vector<float>{0, 1, 254, 255}));
  // A colour image under a grey spec is our caller's mistake, reported not crashed.
  EXPECT_FALSE(PreprocessImage(MakeImage(2, 2, 3, kRgb2x2), spec, DType::kFloat32).ok());

  spec.grayscale = false;
  spec.scale = 1.0f / 255.0f;
  spec.mean = {0.5f, 0.5f, 0.5f};
  spec.stddev = {0.5f, 0.5f, 0.5f};
  absl::StatusOr<Tensor> h = PreprocessImage(MakeImage(2, 2, 3, kRgb2x2), spec, DType::kFloat16);
  ASSERT_TRUE(h.ok()) << h.status();
  ASSERT_EQ(h->dtype(), DType::kFloat16);
  const float x = 10;  // R of pixel 0
  EXPECT_EQ(h->data<uint16_t>()[0], FloatToHalf((x * (1.0f / 255.0f) - 0.5f) / 0.5f));
}

TEST(CalibDataPreprocess, ResizeCropGeometry) {
  auto shape = [](int h, int w, const PreprocessSpec& spec) {
    absl::StatusOr<Tensor> t = PreprocessImage(
        MakeImage(h, w, 3, std::vector<uint8_t>(h * w * 3, 7)), spec, DType::kFloat32);
    return t.ok() ? t->dims() : Dims{};
  };
  PreprocessSpec spec;
  spec.resize_short = 3;
  EXPECT_EQ(shape(8, 5, spec), (Dims{1, 3, 4, 3}));  // long side int(3 * 8 / 5) = 4
  EXPECT_EQ(shape(4, 9, spec), (Dims{1, 3, 3, 6}));  // int(3 * 9 / 4) = 6
  spec.crop_height = spec.crop_width = 2;
  EXPECT_EQ(shape(4, 9, spec), (Dims{1, 3, 2, 2}));
  PreprocessSpec exact;
  exact.resize_height = 48;
  exact.resize_width = 192;
  EXPECT_EQ(shape(30, 100, exact), (Dims{1, 3, 48, 192}));
  PreprocessSpec multiple;
  multiple.size_multiple = 32;
  EXPECT_EQ(shape(50, 70, multiple), (Dims{1, 3, 64, 64}));  // round(1.5625), round(2.1875)
  EXPECT_EQ(shape(10, 90, multiple), (Dims{1, 3, 32, 96}));  // at least one multiple
  // A flat image stays flat through every resize.
  spec.scale = 2;
  absl::StatusOr<Tensor> t = PreprocessImage(MakeImage(5, 7, 3, std::vector<uint8_t>(5 * 7 * 3, 7)),
                                             spec, DType::kFloat32);
  ASSERT_TRUE(t.ok());
  for (float v : t->ToFloatVector()) EXPECT_EQ(v, 14.0f);
}

}  // namespace
}  // namespace qcc::calib
