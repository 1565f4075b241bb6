// SamplePrefetcher: the samples, order, error position and end of Dataset::Next, at any
// capacity, and a reader stopped early by its owner.
#include <string>
#include <vector>

#include "calib/dataset.h"
#include "calib/sample_prefetch.h"
#include "gtest/gtest.h"
#include "support/npy.h"
#include "tests/testing/temp_dir.h"

namespace qcc::calib {
namespace {

using ir::SymbolDim;
using ir::TensorType;

DataInput VectorInput() {
  return DataInput{"x", TensorType(DType::kFloat32, {SymbolDim(0), 3}), ""};
}

// `n` files 000.npy, 001.npy ... holding [i, i, i]; the one at `bad` (if any) has 4 values, the
// wrong shape, which Dataset::Next reports when it reaches it.
std::string WriteVectors(int n, int bad = -1) {
  const std::string dir = qcc::testing::NewTestDir("qcc_data_prefetch");
  for (int i = 0; i < n; ++i) {
    const float v = static_cast<float>(i);
    const Tensor t = i == bad ? Tensor::FromVector<float>(DType::kFloat32, {1, 4}, {v, v, v, v})
                              : Tensor::FromVector<float>(DType::kFloat32, {1, 3}, {v, v, v});
    char name[16];
    std::snprintf(name, sizeof(name), "/%03d.npy", i);
    EXPECT_TRUE(WriteNpy(dir + name, t).ok());
  }
  return dir;
}

std::unique_ptr<Dataset> Open(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<Dataset>> ds = Dataset::Open(dir, {VectorInput()}, {});
  EXPECT_TRUE(ds.ok()) << ds.status();
  return ds.ok() ? *std::move(ds) : nullptr;
}

// Every value Next gives (the first element of each sample) and the status that ended it.
template <typename Reader>
std::vector<float> Drain(Reader& reader, absl::Status* end) {
  std::vector<float> values;
  Sample s;
  while (true) {
    absl::StatusOr<bool> more = reader.Next(&s);
    if (!more.ok() || !*more) {
      *end = more.status();
      return values;
    }
    EXPECT_EQ(s.index, static_cast<int64_t>(values.size()));
    values.push_back(static_cast<float>(s.tensors[0].GetAsDouble(0)));
  }
}

TEST(CalibSamplePrefetch, SameSamplesInOrderAtEveryCapacity) {
  const std::string dir = WriteVectors(23);
  std::unique_ptr<Dataset> ds = Open(dir);
  ASSERT_NE(ds, nullptr);
  absl::Status direct_end;
  ds->Rewind();
  const std::vector<float> direct = Drain(*ds, &direct_end);
  ASSERT_TRUE(direct_end.ok());
  ASSERT_EQ(direct.size(), 23u);
  for (int64_t capacity : {1, 2, 7, 64}) {
    SamplePrefetcher reader(*ds, capacity);
    absl::Status end;
    EXPECT_EQ(Drain(reader, &end), direct) << "capacity " << capacity;
    EXPECT_TRUE(end.ok()) << end;
    Sample s;  // the end stays the end
    absl::StatusOr<bool> again = reader.Next(&s);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE(*again);
  }
}

TEST(CalibSamplePrefetch, ErrorComesAfterTheSamplesBeforeIt) {
  const std::string dir = WriteVectors(10, /*bad=*/6);
  std::unique_ptr<Dataset> ds = Open(dir);
  ASSERT_NE(ds, nullptr);
  for (int64_t capacity : {1, 3, 16}) {
    SamplePrefetcher reader(*ds, capacity);
    absl::Status end;
    EXPECT_EQ(Drain(reader, &end), (std::vector<float>{0, 1, 2, 3, 4, 5})) << capacity;
    EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument) << end;
    EXPECT_NE(end.message().find("006.npy"), std::string::npos) << end;
    Sample s;  // and stays the error
    EXPECT_EQ(reader.Next(&s).status(), end);
  }
}

TEST(CalibSamplePrefetch, OwnerMayStopEarlyAndReadAgain) {
  const std::string dir = WriteVectors(40);
  std::unique_ptr<Dataset> ds = Open(dir);
  ASSERT_NE(ds, nullptr);
  {
    SamplePrefetcher reader(*ds, 4);
    Sample s;
    ASSERT_TRUE(*reader.Next(&s));
    ASSERT_TRUE(*reader.Next(&s));
    EXPECT_EQ(s.tensors[0].GetAsDouble(0), 1.0);
  }  // destroyed with samples queued and the reader blocked on a full queue
  SamplePrefetcher again(*ds, 4);  // rewinds
  absl::Status end;
  const std::vector<float> values = Drain(again, &end);
  EXPECT_TRUE(end.ok());
  ASSERT_EQ(values.size(), 40u);
  EXPECT_EQ(values.front(), 0.0f);
  EXPECT_EQ(values.back(), 39.0f);
}

}  // namespace
}  // namespace qcc::calib
