// Dataset: folder listing, sorted order, selection (max_samples, shards), tensor files,
// multi-input sub-folders, and every bad-input error.
#include <stb/stb_image_write.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "calib/dataset.h"
#include "frontend/tensor_proto.h"
#include "gtest/gtest.h"
#include "support/npy.h"
#include "tests/testing/temp_dir.h"

namespace qcc::calib {
namespace {

namespace fs = std::filesystem;
using ir::SymbolDim;
using ir::TensorType;

std::string TempDir() { return qcc::testing::NewTestDir("qcc_data_dataset"); }

// A 2x2 grey PNG whose every pixel is `value` (so each file is recognisable once loaded).
void WriteGreyPng(const std::string& path, uint8_t value) {
  fs::create_directories(fs::path(path).parent_path());
  const std::vector<uint8_t> px(4, value);
  ASSERT_TRUE(stbi_write_png(path.c_str(), 2, 2, 1, px.data(), 2));
}

DataInput GreyInput() {
  return DataInput{"x", TensorType(DType::kFloat32, {SymbolDim(0), 1, 2, 2}), ""};
}

DatasetOptions GreyOptions(std::vector<std::string>* warnings = nullptr) {
  DatasetOptions o;
  o.preprocess.grayscale = true;
  o.on_warning = [warnings](const std::string& w) {
    if (warnings) warnings->push_back(w);
  };
  return o;
}

// Reads every sample; returns the first pixel of input 0 of each.
std::vector<float> ReadAll(Dataset& ds) {
  std::vector<float> firsts;
  Sample s;
  while (true) {
    absl::StatusOr<bool> more = ds.Next(&s);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    firsts.push_back(static_cast<float>(s.tensors[0].GetAsDouble(0)));
  }
  return firsts;
}

std::unique_ptr<Dataset> OpenOk(const std::string& dir, std::vector<DataInput> inputs,
                                DatasetOptions options) {
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open(dir, inputs, options);
  EXPECT_TRUE(ds.ok()) << ds.status();
  return ds.ok() ? *std::move(ds) : nullptr;
}

void ExpectOpenError(const std::string& dir, std::vector<DataInput> inputs, DatasetOptions options,
                     const std::vector<std::string>& fragments) {
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open(dir, inputs, options);
  ASSERT_FALSE(ds.ok());
  EXPECT_EQ(ds.status().code(), absl::StatusCode::kInvalidArgument);
  for (const std::string& f : fragments) {
    EXPECT_NE(ds.status().message().find(f), std::string::npos)
        << "'" << f << "' in " << ds.status();
  }
}

TEST(CalibDataset, RecursiveSortedOrderIgnoringOtherFiles) {
  const std::string dir = TempDir();
  WriteGreyPng(dir + "/b/1.png", 30);
  WriteGreyPng(dir + "/a/2.png", 20);
  WriteGreyPng(dir + "/a/10.png", 10);
  WriteGreyPng(dir + "/c.PNG", 40);
  std::ofstream(dir + "/labels.txt") << "not data";
  std::unique_ptr<Dataset> ds = OpenOk(dir, {GreyInput()}, GreyOptions());
  ASSERT_TRUE(ds);
  ASSERT_EQ(ds->size(), 4);
  EXPECT_EQ(ds->files(0), (std::vector<std::string>{dir + "/a/10.png", dir + "/a/2.png",
                                                    dir + "/b/1.png", dir + "/c.PNG"}));
  Sample s;
  absl::StatusOr<bool> more = ds->Next(&s);
  ASSERT_TRUE(more.ok() && *more);
  EXPECT_EQ(s.index, 0);
  EXPECT_EQ(s.source, dir + "/a/10.png");
  ASSERT_EQ(s.tensors.size(), 1u);
  EXPECT_EQ(s.tensors[0].dims(), (Dims{1, 1, 2, 2}));
  EXPECT_EQ(s.tensors[0].ToFloatVector(), (std::vector<float>{10, 10, 10, 10}));
  EXPECT_EQ(ReadAll(*ds), (std::vector<float>{20, 30, 40}));
  ds->Rewind();
  EXPECT_EQ(ReadAll(*ds), (std::vector<float>{10, 20, 30, 40}));
}

TEST(CalibDataset, MaxSamplesThenShardsPartitionExactly) {
  const std::string dir = TempDir();
  for (int i = 0; i < 10; ++i) WriteGreyPng(dir + "/" + std::to_string(i) + ".png", i);
  DatasetOptions o = GreyOptions();
  o.max_samples = 7;
  std::unique_ptr<Dataset> all = OpenOk(dir, {GreyInput()}, o);
  ASSERT_TRUE(all);
  EXPECT_EQ(ReadAll(*all), (std::vector<float>{0, 1, 2, 3, 4, 5, 6}));
  std::multiset<float> seen;
  for (int i = 0; i < 3; ++i) {
    o.shard_index = i;
    o.shard_count = 3;
    std::unique_ptr<Dataset> shard = OpenOk(dir, {GreyInput()}, o);
    ASSERT_TRUE(shard);
    const std::vector<float> got = ReadAll(*shard);
    for (float v : got) EXPECT_EQ(static_cast<int>(v) % 3, i);  // every 3rd from i
    seen.insert(got.begin(), got.end());
  }
  EXPECT_EQ(seen, (std::multiset<float>{0, 1, 2, 3, 4, 5, 6}));
  o.shard_index = 3;
  ExpectOpenError(dir, {GreyInput()}, o, {"shard 3/3"});
  o.shard_count = 9;
  o.shard_index = 8;  // 7 samples: shard 8 of 9 is empty
  ExpectOpenError(dir, {GreyInput()}, o, {"empty"});
}

TEST(CalibDataset, TensorFilesAddBatchAndCastToTheInputDtype) {
  const std::string dir = TempDir();
  // [3] f64 without the batch axis, then [1,3] i32 as a .pb file.
  ASSERT_TRUE(
      WriteNpy(dir + "/0.npy", Tensor::FromVector<double>(DType::kFloat64, {3}, {1.5, -2, 3}))
          .ok());
  ASSERT_TRUE(frontend::WriteTensorProtoFile(
                  dir + "/1.pb", Tensor::FromVector<int32_t>(DType::kInt32, {1, 3}, {4, 5, 6}), "v")
                  .ok());
  DataInput in{"v", TensorType(DType::kFloat16, {SymbolDim(0), 3}), "f16[N,3]"};
  std::unique_ptr<Dataset> ds = OpenOk(dir, {in}, DatasetOptions());
  ASSERT_TRUE(ds);
  Sample s;
  ASSERT_TRUE(*ds->Next(&s));
  EXPECT_EQ(s.tensors[0].dtype(), DType::kFloat16);
  EXPECT_EQ(s.tensors[0].dims(), (Dims{1, 3}));
  EXPECT_EQ(s.tensors[0].ToFloatVector(), (std::vector<float>{1.5f, -2, 3}));
  ASSERT_TRUE(*ds->Next(&s));
  EXPECT_EQ(s.tensors[0].ToFloatVector(), (std::vector<float>{4, 5, 6}));
  EXPECT_FALSE(*ds->Next(&s));
}

TEST(CalibDataset, MultiInputSubFolders) {
  const std::string dir = TempDir();
  fs::create_directories(dir + "/ids");
  fs::create_directories(dir + "/image");
  for (int i = 0; i < 3; ++i) {
    WriteGreyPng(dir + "/image/" + std::to_string(i) + ".png", 100 + i);
    ASSERT_TRUE(WriteNpy(dir + "/ids/" + std::to_string(i) + ".npy",
                         Tensor::FromVector<int64_t>(DType::kInt64, {1, 2}, {i, 7}))
                    .ok());
  }
  std::vector<DataInput> inputs = {GreyInput(), {"ids", TensorType(DType::kInt64, {1, 2}), ""}};
  inputs[0].name = "image";
  std::unique_ptr<Dataset> ds = OpenOk(dir, inputs, GreyOptions());
  ASSERT_TRUE(ds);
  Sample s;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(*ds->Next(&s));
    ASSERT_EQ(s.tensors.size(), 2u);
    EXPECT_EQ(s.tensors[0].GetAsDouble(0), 100 + i);
    EXPECT_EQ(s.tensors[1].dtype(), DType::kInt64);
    EXPECT_EQ(s.tensors[1].ToInt64Vector(), (std::vector<int64_t>{i, 7}));
  }
  EXPECT_FALSE(*ds->Next(&s));

  WriteGreyPng(dir + "/image/3.png", 103);
  ExpectOpenError(dir, inputs, GreyOptions(),
                  {"different numbers", "'image' has 4", "'ids' has 3"});
  inputs.push_back({"mask", TensorType(DType::kFloat32, {1}), ""});
  ExpectOpenError(dir, inputs, GreyOptions(), {"one sub-folder per input", "missing: mask"});
}

TEST(CalibDataset, EmptyOrMissingFolder) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/readme.txt") << "nothing to calibrate with";
  ExpectOpenError(dir, {GreyInput()}, GreyOptions(),
                  {"no data files in '" + dir + "'", ".jpg, .jpeg, .png, .npy, .pb"});
  ExpectOpenError(dir + "/nope", {GreyInput()}, GreyOptions(), {"does not exist"});
}

TEST(CalibDataset, UndecodableImageIsSkippedNamedAndCounted) {
  const std::string dir = TempDir();
  WriteGreyPng(dir + "/0.png", 5);
  std::ofstream(dir + "/1.png") << "truncated";
  WriteGreyPng(dir + "/2.png", 7);
  std::vector<std::string> warnings;
  std::unique_ptr<Dataset> ds = OpenOk(dir, {GreyInput()}, GreyOptions(&warnings));
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->size(), 3);
  EXPECT_EQ(ReadAll(*ds), (std::vector<float>{5, 7}));
  EXPECT_EQ(ds->skipped(), 1);
  EXPECT_EQ(ds->skipped_files(), (std::vector<std::string>{dir + "/1.png"}));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(dir + "/1.png"), std::string::npos) << warnings[0];
}

// Issue 16's calibration faults: a zero-byte image, a directory named like an image, an image
// deleted after the folder was listed (skipped with a warning naming it), and a tensor file
// deleted the same way (an error naming it: a tensor cannot be skipped silently).
TEST(CalibDataset, FaultsInTheFolderAreSkippedNamedOrClearErrors) {
  const std::string dir = TempDir();
  WriteGreyPng(dir + "/0.png", 5);
  std::ofstream(dir + "/1.jpg");           // zero bytes
  fs::create_directories(dir + "/2.png");  // a directory named like an image, empty
  WriteGreyPng(dir + "/3.png", 7);
  WriteGreyPng(dir + "/4.png", 9);
  std::vector<std::string> warnings;
  std::unique_ptr<Dataset> ds = OpenOk(dir, {GreyInput()}, GreyOptions(&warnings));
  ASSERT_TRUE(ds);
  EXPECT_EQ(ds->size(), 4);    // the directory is no sample
  fs::remove(dir + "/3.png");  // deleted while calibration runs
  EXPECT_EQ(ReadAll(*ds), (std::vector<float>{5, 9}));
  EXPECT_EQ(ds->skipped_files(), (std::vector<std::string>{dir + "/1.jpg", dir + "/3.png"}));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find(dir + "/1.jpg"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find(dir + "/3.png"), std::string::npos) << warnings[1];

  const std::string npy_dir = TempDir();
  Tensor t(DType::kFloat32, {1, 1, 2, 2});
  ASSERT_TRUE(WriteNpy(npy_dir + "/0.npy", t).ok());
  ASSERT_TRUE(WriteNpy(npy_dir + "/1.npy", t).ok());
  std::unique_ptr<Dataset> tensors = OpenOk(npy_dir, {GreyInput()}, GreyOptions());
  ASSERT_TRUE(tensors);
  fs::remove(npy_dir + "/1.npy");
  Sample sample;
  ASSERT_TRUE(tensors->Next(&sample).value());
  absl::StatusOr<bool> gone = tensors->Next(&sample);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.status().message().find(npy_dir + "/1.npy"), std::string::npos) << gone.status();
}

TEST(CalibDataset, AllImagesBadIsAnError) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/0.jpg") << "x";
  std::ofstream(dir + "/1.png") << "y";
  ExpectOpenError(dir, {GreyInput()}, GreyOptions(), {"none of the 2 images", "0.jpg"});
}

TEST(CalibDataset, WrongChannelsOrRankFailBeforeInference) {
  const std::string dir = TempDir();
  WriteGreyPng(dir + "/only.png", 1);
  DataInput rgb{"x", TensorType(DType::kFloat32, {SymbolDim(0), 3, 2, 2}), "f32[N,3,2,2]"};
  ExpectOpenError(dir, {rgb}, GreyOptions(),
                  {dir + "/only.png", "[1,1,2,2]", "f32[N,3,2,2]", "grey"});
  DataInput flat{"x", TensorType(DType::kFloat32, {SymbolDim(0), 4}), "f32[N,4]"};
  ExpectOpenError(dir, {flat}, GreyOptions(), {"[1,1,2,2]", "f32[N,4]"});

  const std::string npy_dir = TempDir();
  ASSERT_TRUE(WriteNpy(npy_dir + "/a.npy", Tensor(DType::kFloat32, {2, 3})).ok());
  ExpectOpenError(npy_dir, {rgb}, DatasetOptions(), {npy_dir + "/a.npy", "[2,3]", "f32[N,3,2,2]"});
  DataInput batch{"x", TensorType(DType::kFloat32, {SymbolDim(0), 3}), ""};
  ExpectOpenError(npy_dir, {batch}, DatasetOptions(), {"[2,3]", "f32[?,3]"});  // batch must be 1
  // A later sample of another shape fails when read, naming it.
  ASSERT_TRUE(WriteNpy(npy_dir + "/b.npy", Tensor(DType::kFloat32, {1, 4})).ok());
  ASSERT_TRUE(WriteNpy(npy_dir + "/0.npy", Tensor(DType::kFloat32, {1, 3})).ok());
  fs::remove(npy_dir + "/a.npy");
  std::unique_ptr<Dataset> ds = OpenOk(npy_dir, {batch}, DatasetOptions());
  ASSERT_TRUE(ds);
  Sample s;
  ASSERT_TRUE(*ds->Next(&s));
  absl::StatusOr<bool> bad = ds->Next(&s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find(npy_dir + "/b.npy"), std::string::npos) << bad.status();
}

TEST(CalibDataset, BadTensorFileIsAnErrorNotASkip) {
  const std::string dir = TempDir();
  std::ofstream(dir + "/0.npy") << "not numpy";
  DataInput in{"x", TensorType(DType::kFloat32, {1, 3}), ""};
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open(dir, {in}, DatasetOptions());
  ASSERT_FALSE(ds.ok());
  EXPECT_NE(ds.status().message().find("0.npy"), std::string::npos) << ds.status();
}

}  // namespace
}  // namespace qcc::calib
