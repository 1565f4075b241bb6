#include "support/npy.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "support/float16.h"

namespace qcc {
namespace {

using ::testing::HasSubstr;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qcc_npy_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::string WriteBytes(const std::string& name, const std::string& bytes) const {
    const std::string p = Path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  std::filesystem::path dir_;
};

// A .npy file as NumPy lays it out: magic, version, little-endian header length, the header
// dictionary padded with spaces to a multiple of 64 bytes and ended by '\n', then the data.
std::string NpyBytes(int major, const std::string& dict, const std::string& data) {
  const size_t len_size = major == 1 ? 2 : 4;
  const size_t prefix = 8 + len_size;
  std::string header = dict;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (size_t i = 0; i < len_size; ++i) out.push_back(static_cast<char>(header.size() >> (8 * i)));
  return out + header + data;
}

template <typename T>
std::string RawBytes(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

TEST_F(NpyTest, RoundTripsEveryDtype) {
  const DType dtypes[] = {DType::kFloat32, DType::kFloat16, DType::kFloat64, DType::kInt8,
                          DType::kUInt8,   DType::kInt16,   DType::kUInt16,  DType::kInt32,
                          DType::kUInt32,  DType::kInt64,   DType::kUInt64,  DType::kBool};
  for (DType dt : dtypes) {
    SCOPED_TRACE(std::string(DTypeName(dt)));
    Tensor t(dt, {2, 3, 5});
    auto* bytes = static_cast<uint8_t*>(t.raw());
    for (size_t i = 0; i < t.nbytes(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
    if (dt == DType::kBool) {
      for (int64_t i = 0; i < t.numel(); ++i) bytes[i] = i % 3 == 0;
    }
    const std::string p = Path("t.npy");
    ASSERT_TRUE(WriteNpy(p, t).ok());
    absl::StatusOr<Tensor> back = ReadNpy(p);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(back->BitwiseEquals(t));
  }
}

TEST_F(NpyTest, RoundTripsScalarsEmptyAndOneDimensional) {
  for (const Dims& dims : {Dims{}, Dims{0}, Dims{4, 0, 2}, Dims{7}}) {
    SCOPED_TRACE(DimsToString(dims));
    Tensor t(DType::kFloat32, dims);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = 0.5f * i - 1;
    ASSERT_TRUE(WriteNpy(Path("s.npy"), t).ok());
    absl::StatusOr<Tensor> back = ReadNpy(Path("s.npy"));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(back->BitwiseEquals(t));
  }
}

TEST_F(NpyTest, EncodesTheHeaderLikeNumPy) {
  Tensor t = Tensor::FromVector<float>(DType::kFloat32, {2, 3}, {1, 2, 3, 4, 5, 6});
  absl::StatusOr<std::string> bytes = EncodeNpy(t);
  ASSERT_TRUE(bytes.ok());
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  EXPECT_EQ(*bytes, NpyBytes(1, dict, RawBytes<float>({1, 2, 3, 4, 5, 6})));
  EXPECT_EQ(bytes->size(), 128u + 24u);  // header padded to 128 bytes, then 6 floats
  EXPECT_EQ((*bytes)[127], '\n');

  absl::StatusOr<std::string> one = EncodeNpy(Tensor(DType::kUInt8, {3}));
  ASSERT_TRUE(one.ok());
  EXPECT_THAT(*one, HasSubstr("{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }"));
  absl::StatusOr<std::string> scalar = EncodeNpy(Tensor(DType::kBool, {}));
  ASSERT_TRUE(scalar.ok());
  EXPECT_THAT(*scalar, HasSubstr("{'descr': '|b1', 'fortran_order': False, 'shape': (), }"));
}

TEST_F(NpyTest, ReadsHandWrittenHeadersOfEveryVersion) {
  const std::string data = RawBytes<int32_t>({0, 1, 2, 3, 4, -5});
  const std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }";
  for (int major : {1, 2, 3}) {
    SCOPED_TRACE(major);
    absl::StatusOr<Tensor> t = ParseNpy(NpyBytes(major, dict, data), "mem");
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->dtype(), DType::kInt32);
    EXPECT_EQ(t->dims(), (Dims{2, 3}));
    EXPECT_EQ(t->ToInt64Vector(), (std::vector<int64_t>{0, 1, 2, 3, 4, -5}));
  }
}

TEST_F(NpyTest, AcceptsHeaderVariants) {
  // Keys in another order, double quotes, no trailing comma, Python 2 long extents.
  const std::string dict = "{\"shape\": (2L, 2L), \"fortran_order\": False, \"descr\": \"<f2\"}";
  const std::vector<uint16_t> halves = {FloatToHalf(1.5f), FloatToHalf(-2.0f), FloatToHalf(0.25f),
                                        FloatToHalf(65504.0f)};
  absl::StatusOr<Tensor> t = ParseNpy(NpyBytes(1, dict, RawBytes(halves)), "mem");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kFloat16);
  EXPECT_EQ(t->ToFloatVector(), (std::vector<float>{1.5f, -2.0f, 0.25f, 65504.0f}));

  // One-byte types with an explicit byte order, and bool bytes other than 0/1.
  absl::StatusOr<Tensor> b =
      ParseNpy(NpyBytes(1, "{'descr': '<b1', 'fortran_order': False, 'shape': (3,), }",
                        std::string("\x00\x01\x07", 3)),
               "mem");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->ToInt64Vector(), (std::vector<int64_t>{0, 1, 1}));
  absl::StatusOr<Tensor> i8 = ParseNpy(
      NpyBytes(1, "{'descr': '|i1', 'fortran_order': False, 'shape': (2,), }", "\xff\x05"), "m");
  ASSERT_TRUE(i8.ok()) << i8.status();
  EXPECT_EQ(i8->ToInt64Vector(), (std::vector<int64_t>{-1, 5}));
}

TEST_F(NpyTest, RejectsFortranOrderAndBigEndian) {
  const std::string data = RawBytes<float>({1, 2, 3, 4});
  absl::StatusOr<Tensor> f = ParseNpy(
      NpyBytes(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", data), "a.npy");
  EXPECT_EQ(f.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(f.status().message(), HasSubstr("Fortran"));
  EXPECT_THAT(f.status().message(), HasSubstr("a.npy"));

  absl::StatusOr<Tensor> be = ParseNpy(
      NpyBytes(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", data), "b.npy");
  EXPECT_EQ(be.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(be.status().message(), HasSubstr("big-endian"));

  absl::StatusOr<Tensor> obj = ParseNpy(
      NpyBytes(1, "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "12345678"), "c");
  EXPECT_EQ(obj.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(obj.status().message(), HasSubstr("'|O'"));

  absl::StatusOr<Tensor> rec = ParseNpy(
      NpyBytes(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "1234"),
      "d");
  EXPECT_THAT(rec.status().message(), HasSubstr("structured"));
}

TEST_F(NpyTest, TruncatedAndGarbageFilesNameTheFile) {
  Tensor t = Tensor::FromVector<double>(DType::kFloat64, {3}, {1, 2, 3});
  absl::StatusOr<std::string> bytes = EncodeNpy(t);
  ASSERT_TRUE(bytes.ok());

  const std::string cut = WriteBytes("cut.npy", bytes->substr(0, bytes->size() - 5));
  absl::StatusOr<Tensor> r = ReadNpy(cut);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr(cut));
  EXPECT_THAT(r.status().message(), HasSubstr("truncated"));
  EXPECT_THAT(r.status().message(), HasSubstr("needs 24 bytes, file has 19"));

  const std::string header_cut = WriteBytes("hcut.npy", bytes->substr(0, 40));
  EXPECT_THAT(ReadNpy(header_cut).status().message(), HasSubstr("truncated .npy header"));

  const std::string extra = WriteBytes("extra.npy", *bytes + "xyz");
  EXPECT_THAT(ReadNpy(extra).status().message(), HasSubstr("3 unexpected bytes"));

  const std::string garbage = WriteBytes("garbage.npy", "this is not numpy data at all");
  absl::StatusOr<Tensor> g = ReadNpy(garbage);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr(garbage));
  EXPECT_THAT(g.status().message(), HasSubstr("not a .npy file"));

  const std::string empty = WriteBytes("empty.npy", "");
  EXPECT_THAT(ReadNpy(empty).status().message(), HasSubstr("not a .npy file"));

  const std::string bad_dict = WriteBytes(
      "dict.npy", NpyBytes(1, "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "1234"));
  EXPECT_THAT(ReadNpy(bad_dict).status().message(), HasSubstr("invalid .npy header"));

  const std::string huge = WriteBytes(
      "huge.npy", NpyBytes(1,
                           "{'descr': '<f8', 'fortran_order': False, 'shape': (1125899906842624, "
                           "1125899906842624), }",
                           ""));
  EXPECT_THAT(ReadNpy(huge).status().message(), HasSubstr("too large"));

  const std::string future = WriteBytes("v9.npy", NpyBytes(1, "{}", "").replace(6, 1, "\x09"));
  EXPECT_THAT(ReadNpy(future).status().message(), HasSubstr("version 9"));
}

TEST_F(NpyTest, MissingFilesAndDirectories) {
  absl::StatusOr<Tensor> r = ReadNpy(Path("nope.npy"));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), HasSubstr("nope.npy"));
  EXPECT_THAT(ReadNpy(dir_.string()).status().message(), HasSubstr("is a directory"));
}

TEST_F(NpyTest, WriteIsAtomicAndReportsErrors) {
  // bf16 has no NumPy dtype: nothing is written.
  absl::Status s = WriteNpy(Path("bf.npy"), Tensor(DType::kBFloat16, {2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_FALSE(std::filesystem::exists(Path("bf.npy")));

  EXPECT_FALSE(WriteNpy(Path("no/such/dir/x.npy"), Tensor(DType::kFloat32, {1})).ok());

  // Overwriting replaces the file and leaves no temporary behind.
  ASSERT_TRUE(WriteNpy(Path("x.npy"), Tensor(DType::kFloat32, {100})).ok());
  ASSERT_TRUE(WriteNpy(Path("x.npy"), Tensor(DType::kInt8, {2})).ok());
  EXPECT_EQ(ReadNpy(Path("x.npy"))->dtype(), DType::kInt8);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

}  // namespace
}  // namespace qcc
