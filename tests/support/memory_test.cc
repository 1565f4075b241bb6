// Sizes and the memory limit (support/memory.h).
#include "support/memory.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace qcc {
namespace {

TEST(Memory, DenseBytesRefusesNegativeExtentsAndOverflow) {
  EXPECT_EQ(DenseBytes(DType::kFloat32, {2, 3}), 24u);
  EXPECT_EQ(DenseBytes(DType::kInt8, {}), 1u);
  EXPECT_EQ(DenseBytes(DType::kFloat32, {0, 1000}), 0u);
  EXPECT_FALSE(DenseBytes(DType::kFloat32, {-1, 4}).has_value());
  EXPECT_FALSE(DenseBytes(DType::kFloat32, {int64_t{1} << 40, int64_t{1} << 40}).has_value());
  EXPECT_FALSE(DenseBytes(DType::kInt8, {int64_t{1} << 62, 2}).has_value());  // past 2^62
}

TEST(Memory, ByteSizesParseWithBinaryUnits) {
  EXPECT_EQ(*ParseByteSize("1073741824", "--max-memory"), int64_t{1} << 30);
  EXPECT_EQ(*ParseByteSize("512M", "--max-memory"), int64_t{512} << 20);
  EXPECT_EQ(*ParseByteSize("8G", "--max-memory"), int64_t{8} << 30);
  EXPECT_EQ(*ParseByteSize("8gib", "--max-memory"), int64_t{8} << 30);
  EXPECT_EQ(*ParseByteSize("1.5K", "--max-memory"), 1536);
  EXPECT_EQ(*ParseByteSize("2TB", "--max-memory"), int64_t{2} << 40);
  for (const char* bad : {"", "G", "-1G", "0", "eight", "1X", "1e30"}) {
    absl::StatusOr<int64_t> v = ParseByteSize(bad, "--max-memory");
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_NE(v.status().message().find("--max-memory '"), std::string::npos) << v.status();
  }
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(uint64_t{3} << 30), "3.00 GiB");
  EXPECT_EQ(FormatBytes(uint64_t{40} << 40), "40.00 TiB");
}

TEST(Memory, CheckMemoryCountsWhatIsHeld) {
  EXPECT_TRUE(CheckMemory(100, 0, 100, "x").ok());
  EXPECT_TRUE(CheckMemory(60, 40, 100, "x").ok());
  const absl::Status s = CheckMemory(61, 40, 100, "node 'n' (Expand): output 0 f32[61]");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("node 'n' (Expand): output 0 f32[61] needs 61 B (61 bytes), more "
                             "than the memory limit of 100 B with 40 B in use"),
            std::string::npos)
      << s;
  EXPECT_NE(s.message().find("--max-memory"), std::string::npos) << s;
  // 0 means the machine's memory, which is more than nothing and less than 2^62 bytes.
  EXPECT_GT(DefaultMemoryLimit(), int64_t{1} << 20);
  EXPECT_EQ(EffectiveMemoryLimit(0), DefaultMemoryLimit());
  EXPECT_EQ(EffectiveMemoryLimit(123), 123);
  EXPECT_FALSE(CheckMemory(uint64_t{1} << 62, 0, 0, "x").ok());
}

}  // namespace
}  // namespace qcc
