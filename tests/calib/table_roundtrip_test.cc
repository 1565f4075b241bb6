// Calibration table: byte-identical round trips, deterministic output, atomic writes.
#include <dirent.h>

#include <string>

#include "calib/calib_table.h"
#include "gtest/gtest.h"
#include "tests/calib/table_test_util.h"

namespace qcc::calib {
namespace {

using testing::MakeTable;
using testing::ReadFile;
using testing::TempPath;

TEST(CalibTableRoundTripTest, WriteReadWriteIsByteIdentical) {
  const CalibTable table = MakeTable(0, 10);
  const std::string path = TempPath("roundtrip.json");
  ASSERT_TRUE(WriteCalibTable(path, table).ok());
  auto back = ReadCalibTable(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->source, path);
  EXPECT_EQ(back->fingerprint, table.fingerprint);
  EXPECT_EQ(back->qcc_version, "0.1.0");
  EXPECT_EQ(back->samples, 10);
  EXPECT_EQ(back->settings.batch, 4);
  EXPECT_EQ(back->settings.method, "mse");
  EXPECT_EQ(back->preprocessing,
            R"({"layout":"nchw","mean":[0.49,0.48,0.45],"resize":32})");  // keys sorted
  ASSERT_EQ(back->tensors.size(), table.tensors.size());
  for (const auto& [name, stats] : table.tensors) {
    ASSERT_EQ(back->tensors.count(name), 1u) << name;
    EXPECT_EQ(back->tensors.at(name), stats) << name;
  }
  auto again = CalibTableToJson(*back);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, ReadFile(path));
  std::remove(path.c_str());
}

TEST(CalibTableRoundTripTest, OutputIsDeterministicAndReadable) {
  auto a = CalibTableToJson(MakeTable(0, 6));
  auto b = CalibTableToJson(MakeTable(0, 6));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  // Header fields first, one tensor per line, sorted by name, escaped.
  EXPECT_EQ(a->rfind("{\n \"format\": \"qcc-calib\",\n \"version\": 1,\n", 0), 0u) << *a;
  EXPECT_NE(a->find("\"settings\": {\"batch\":4,\"max_samples\":0,\"method\":\"mse\","
                    "\"shard\":\"0/1\"}"),
            std::string::npos);
  EXPECT_NE(a->find("\n  \"relu \\\"1\\\"\": {\"min\":0,"), std::string::npos) << *a;
  EXPECT_LT(a->find("\"conv1/out\""), a->find("\"gemm:0\""));
  // The all-zero tensor: one run holding every value in the bin [0, w).
  EXPECT_NE(a->find("\"zeros\": {\"min\":0,\"max\":0,\"count\":1800,\"nan\":0,\"posinf\":0,"
                    "\"neginf\":0,\"range\":7.888609052210118e-31,\"hist\":[[1024,1800]]}"),
            std::string::npos)
      << *a;
  EXPECT_NE(a->find("\"nan\":1,"), std::string::npos);
}

TEST(CalibTableRoundTripTest, EmptyAndNonFiniteOnlyTensors) {
  CalibTable t;
  t.fingerprint = "ff";
  t.tensors["never"];
  const float nan = std::numeric_limits<float>::quiet_NaN();
  t.tensors["nan"].Add(&nan, 1);
  auto text = CalibTableToJson(t);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("\"nan\": {\"min\":null,\"max\":null,\"count\":1,\"nan\":1,\"posinf\":0,"
                       "\"neginf\":0,\"range\":0,\"hist\":[]}"),
            std::string::npos)
      << *text;
  auto back = CalibTableFromJson(*text, "mem");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->tensors.at("nan"), t.tensors.at("nan"));
  EXPECT_EQ(back->tensors.at("never"), TensorStats());
  EXPECT_EQ(*CalibTableToJson(*back), *text);
}

TEST(CalibTableRoundTripTest, WriteIsAtomicAndLeavesNoTemporaryFiles) {
  const std::string path = TempPath("atomic.json");
  testing::WriteFile(path, "old contents");
  ASSERT_TRUE(WriteCalibTable(path, MakeTable(0, 2)).ok());
  EXPECT_EQ(ReadFile(path).rfind("{\n \"format\"", 0), 0u);
  // A folder that does not exist: an error naming the path, and nothing written.
  const std::string bad = TempPath("no/such/dir/t.json");
  absl::Status s = WriteCalibTable(bad, MakeTable(0, 2));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(bad), std::string::npos) << s;
  // Bad preprocessing is refused before any file is opened: the old table stays.
  CalibTable broken = MakeTable(0, 1);
  broken.preprocessing = "[1, 2]";
  s = WriteCalibTable(path, broken);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("not a JSON object"), std::string::npos) << s;
  EXPECT_TRUE(ReadCalibTable(path).ok());
  // No "<path>.tmp.*" leftovers.
  const std::string dir = ::testing::TempDir();
  DIR* d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr);
  const std::string stem = path.substr(path.rfind('/') + 1) + ".tmp.";
  while (dirent* e = readdir(d)) EXPECT_NE(std::string(e->d_name).rfind(stem, 0), 0u) << e->d_name;
  closedir(d);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace qcc::calib
