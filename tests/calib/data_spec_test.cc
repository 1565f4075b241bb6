// PreprocessSpec: JSON, command-line flags, inference from the input type, and DATA.md's models.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "calib/preprocess.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace qcc::calib {
namespace {

using ir::SymbolDim;
using ir::TensorType;

// The preprocessing of every shared model (shared/DATA.md).
PreprocessSpec Mnist() {
  PreprocessSpec s;
  s.grayscale = true;
  return s;
}
PreprocessSpec Resnet20() {
  PreprocessSpec s;
  s.scale = 1.0f / 255.0f;
  s.mean = {0.485f, 0.456f, 0.406f};
  s.stddev = {0.229f, 0.224f, 0.225f};
  return s;
}
PreprocessSpec Squeezenet() {
  PreprocessSpec s;
  s.resize_short = 256;
  s.crop_height = s.crop_width = 224;
  s.channel_order = ChannelOrder::kBgr;
  s.mean = {104, 117, 123};
  return s;
}
PreprocessSpec PpocrCls() {
  PreprocessSpec s;
  s.resize_height = 48;
  s.resize_width = 192;
  s.scale = 1.0f / 255.0f;
  s.mean = {0.5f, 0.5f, 0.5f};
  s.stddev = {0.5f, 0.5f, 0.5f};
  return s;
}
PreprocessSpec PpocrDet() {
  PreprocessSpec s = PpocrCls();
  s.resize_height = s.resize_width = 0;
  s.resize_short = 640;
  s.size_multiple = 32;
  return s;
}

void ExpectError(absl::string_view json, absl::string_view fragment) {
  absl::StatusOr<PreprocessSpec> s = PreprocessSpecFromJson(json);
  ASSERT_FALSE(s.ok()) << json;
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find(fragment), std::string::npos) << s.status();
}

TEST(CalibDataSpec, EverySharedModelRoundTripsThroughJson) {
  for (const PreprocessSpec& spec : {Mnist(), Resnet20(), Squeezenet(), PpocrCls(), PpocrDet()}) {
    absl::StatusOr<PreprocessSpec> back = PreprocessSpecFromJson(spec.ToJson());
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << spec.ToJson();
    EXPECT_TRUE(*back == spec) << spec.ToJson();
  }
  // Floats print as their shortest text.
  EXPECT_NE(Resnet20().ToJson().find("0.485,"), std::string::npos) << Resnet20().ToJson();
}

TEST(CalibDataSpec, ReadsDataMdStyleJson) {
  absl::StatusOr<PreprocessSpec> s = PreprocessSpecFromJson(
      R"({"resize": 256, "crop": 224, "channel_order": "BGR", "mean": [104, 117, 123]})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(*s == Squeezenet());
  s = PreprocessSpecFromJson(
      R"({"resize": [48, 192], "scale": 0.00392156862745098, "mean": 0.5, "std": [0.5]})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(*s == PpocrCls());
  s = PreprocessSpecFromJson(R"({"grayscale": true, "layout": "nhwc", "crop": [2, 3]})");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->grayscale);
  EXPECT_EQ(s->layout, Layout::kNhwc);
  EXPECT_EQ(s->crop_height, 2);
  EXPECT_EQ(s->crop_width, 3);
  EXPECT_TRUE(PreprocessSpecFromJson("{}").ok());
}

TEST(CalibDataSpec, JsonErrorsNameTheKey) {
  ExpectError(R"({"resize": 256, "colour": "rgb"})", "'colour'");
  ExpectError(R"({"channel_order": "rbg"})", "'channel_order'");
  ExpectError(R"({"layout": 3})", "'layout'");
  ExpectError(R"({"resize": [1, 2, 3]})", "'resize'");
  ExpectError(R"({"resize": -4})", "'resize'");
  ExpectError(R"({"crop": "224"})", "'crop'");
  ExpectError(R"({"mean": [1, 2]})", "'mean'");
  ExpectError(R"({"std": [0, 1, 1]})", "'std'");
  ExpectError(R"({"scale": "1/255"})", "'scale'");
  ExpectError(R"({"grayscale": 1})", "'grayscale'");
  ExpectError(R"({"size_multiple": 2.5})", "'size_multiple'");
  ExpectError(R"({"resize": 256)", "not valid JSON");
  ExpectError(R"([1, 2])", "JSON object");
}

TEST(CalibDataSpec, JsonFile) {
  const std::string dir = qcc::testing::NewTestDir("qcc_data_spec");
  std::ofstream(dir + "/good.json") << Squeezenet().ToJson();
  std::ofstream(dir + "/bad.json") << R"({"mean": "x"})";
  absl::StatusOr<PreprocessSpec> s = PreprocessSpecFromJsonFile(dir + "/good.json");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(*s == Squeezenet());
  s = PreprocessSpecFromJsonFile(dir + "/bad.json");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("bad.json"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("'mean'"), std::string::npos) << s.status();
  EXPECT_EQ(PreprocessSpecFromJsonFile(dir + "/none.json").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(CalibDataSpec, FlagsSetTheSameFields) {
  PreprocessSpec s;
  ASSERT_TRUE(ApplyPreprocessFlag("resize", "48x192", &s).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("scale", "1/255", &s).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("mean", "0.5,0.5,0.5", &s).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("std", "0.5", &s).ok());
  EXPECT_TRUE(s == PpocrCls());
  PreprocessSpec q;
  ASSERT_TRUE(ApplyPreprocessFlag("resize", "256", &q).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("crop", "224", &q).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("channel-order", "bgr", &q).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("mean", "104,117,123", &q).ok());
  EXPECT_TRUE(q == Squeezenet());
  PreprocessSpec g;
  ASSERT_TRUE(ApplyPreprocessFlag("grayscale", "", &g).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("layout", "nhwc", &g).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("size-multiple", "32", &g).ok());
  ASSERT_TRUE(ApplyPreprocessFlag("crop", "3x5", &g).ok());
  EXPECT_TRUE(g.grayscale);
  EXPECT_EQ(g.layout, Layout::kNhwc);
  EXPECT_EQ(g.size_multiple, 32);
  EXPECT_EQ(g.crop_height, 3);
  EXPECT_EQ(g.crop_width, 5);
  for (auto [flag, value] :
       std::vector<std::pair<const char*, const char*>>{{"resize", "big"},
                                                        {"crop", "1x2x3"},
                                                        {"mean", "1,a,2"},
                                                        {"mean", "1,2"},
                                                        {"scale", "1/0"},
                                                        {"channel-order", "grb"},
                                                        {"layout", "chw"},
                                                        {"frobnicate", "1"}}) {
    absl::Status st = ApplyPreprocessFlag(flag, value, &g);
    ASSERT_FALSE(st.ok()) << flag << " " << value;
    EXPECT_NE(st.message().find(absl::StrCat("--", flag)), std::string::npos) << st;
  }
}

TEST(CalibDataSpec, InfersFromTheInputType) {
  const ir::Dim n = SymbolDim(0);
  absl::StatusOr<PreprocessSpec> s =
      InferPreprocessSpec(TensorType(DType::kFloat32, {1, 1, 28, 28}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->grayscale);
  EXPECT_EQ(s->scale, 1.0f);
  EXPECT_EQ(s->resize_short, 28);
  EXPECT_EQ(s->crop_height, 28);
  EXPECT_EQ(s->Describe(), "grey, resize short side to 28, centre crop 28x28, raw 0..255, NCHW");

  s = InferPreprocessSpec(TensorType(DType::kFloat32, {n, 3, 32, 32}));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_FALSE(s->grayscale);
  EXPECT_EQ(s->scale, 1.0f / 255.0f);
  EXPECT_EQ(s->crop_width, 32);

  s = InferPreprocessSpec(TensorType(DType::kFloat32, {n, 3, 48, 192}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->resize_height, 48);
  EXPECT_EQ(s->resize_width, 192);
  EXPECT_EQ(s->crop_height, 0);

  s = InferPreprocessSpec(TensorType(DType::kFloat16, {1, 224, 224, 3}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->layout, Layout::kNhwc);
  EXPECT_EQ(s->resize_short, 224);

  s = InferPreprocessSpec(TensorType(DType::kFloat32, {n, 3, ir::kUnknownDim, SymbolDim(1)}));
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->resize_short + s->resize_height + s->crop_height, 0);

  EXPECT_FALSE(InferPreprocessSpec(TensorType(DType::kFloat32, {n, 10})).ok());
  EXPECT_FALSE(InferPreprocessSpec(TensorType(DType::kFloat32, {n, 5, 7, 9})).ok());
  EXPECT_FALSE(InferPreprocessSpec(TensorType::UnknownShape(DType::kFloat32)).ok());
}

TEST(CalibDataSpec, DescribesInOneLine) {
  EXPECT_EQ(Squeezenet().Describe(),
            "BGR, resize short side to 256, centre crop 224x224, x - (104,117,123), NCHW");
  EXPECT_EQ(Resnet20().Describe(),
            "RGB, no resize, (x/255 - (0.485,0.456,0.406)) / (0.229,0.224,0.225), NCHW");
  EXPECT_EQ(PpocrDet().Describe(),
            "RGB, resize short side to 640, H,W rounded to multiples of 32, (x/255 - "
            "(0.5,0.5,0.5)) / (0.5,0.5,0.5), NCHW");
}

TEST(CalibDataSpec, ValidateRejectsInconsistentSpecs) {
  PreprocessSpec s;
  s.resize_short = 10;
  s.resize_height = s.resize_width = 5;
  EXPECT_FALSE(s.Validate().ok());
  s = PreprocessSpec();
  s.crop_height = 3;
  EXPECT_FALSE(s.Validate().ok());
  s = PreprocessSpec();
  s.stddev[1] = 0;
  EXPECT_FALSE(s.Validate().ok());
  EXPECT_TRUE(PreprocessSpec().Validate().ok());
}

}  // namespace
}  // namespace qcc::calib
