// Damaged plan files: every one is rejected with a clear InvalidArgument, never a crash.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/plan.h"
#include "runtime/plan_format.h"
#include "tests/runtime/plan_test_util.h"

namespace qcc::runtime {
namespace {

using ::qcc::runtime::plan_testing::MakeTestPlan;
using ::testing::HasSubstr;

std::string Serialized() {
  absl::StatusOr<std::string> bytes = SerializePlan(MakeTestPlan());
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? *bytes : std::string();
}

// Rewrites the trailer so that the checksum matches the (modified) bytes before it.
void FixChecksum(std::string& bytes) {
  const uint32_t crc =
      PlanChecksum(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size() - 4);
  for (int i = 0; i < 4; ++i) bytes[bytes.size() - 4 + i] = static_cast<char>(crc >> (8 * i));
}

void PutU32(std::string& bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>(v >> (8 * i));
}

TEST(PlanRejectTest, EmptyFile) {
  absl::StatusOr<Plan> plan = ParsePlanBytes("", "e.plan");
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("e.plan: empty file, not a qcc plan"));
}

TEST(PlanRejectTest, OnnxFileIsNotAPlan) {
  const std::string path = std::string(QCC_SHARED_DIR) + "/models/mnist-8/model.onnx";
  absl::StatusOr<Plan> plan = ReadPlan(path);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr(path + ": not a qcc plan"));
  EXPECT_THAT(plan.status().message(), HasSubstr("qcc compile"));
}

TEST(PlanRejectTest, WrongVersionSaysRecompile) {
  std::string bytes = Serialized();
  PutU32(bytes, kPlanVersionOffset, kPlanFormatVersion + 1);
  FixChecksum(bytes);  // so that the version check, not the checksum, is what fires
  absl::StatusOr<Plan> plan = ParsePlanBytes(bytes, "v.plan");
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(
      plan.status().message(),
      HasSubstr(absl::StrCat("v.plan: plan format version ", kPlanFormatVersion + 1,
                             ", this qcc reads ", kPlanFormatVersion, ": recompile the model")));
}

TEST(PlanRejectTest, TruncationAtEveryOffset) {
  const std::string bytes = Serialized();
  for (size_t n = 1; n < bytes.size(); ++n) {
    absl::StatusOr<Plan> plan = ParsePlanBytes(bytes.substr(0, n), "t.plan");
    ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument) << "length " << n;
    EXPECT_THAT(plan.status().message(), HasSubstr("t.plan: truncated plan file: expected "))
        << "length " << n;
    if (n >= kPlanHeaderBytes) {
      EXPECT_THAT(plan.status().message(),
                  HasSubstr(absl::StrCat("expected ", bytes.size(), " bytes, file has ", n)));
    }
  }
}

TEST(PlanRejectTest, TrailingBytes) {
  absl::StatusOr<Plan> plan = ParsePlanBytes(Serialized() + "x", "x.plan");
  EXPECT_THAT(plan.status().message(), HasSubstr("where its header says"));
}

TEST(PlanRejectTest, SingleByteCorruptionAtEveryOffset) {
  const std::string good = Serialized();
  int checksum_errors = 0;
  for (size_t at = 0; at < good.size(); ++at) {
    for (uint8_t flip : {0x01, 0x80, 0xff}) {
      std::string bytes = good;
      bytes[at] = static_cast<char>(bytes[at] ^ flip);
      absl::StatusOr<Plan> plan = ParsePlanBytes(bytes, "c.plan");
      ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument)
          << "byte " << at << " ^ " << int{flip};
      EXPECT_THAT(plan.status().message(), HasSubstr("c.plan: "));
      checksum_errors += absl::StrContains(plan.status().message(), "checksum");
    }
  }
  // Everything past the header is caught by the checksum (and some header bytes too).
  EXPECT_GE(checksum_errors, 3 * static_cast<int>(good.size() - kPlanHeaderBytes));
}

// With the checksum recomputed, the structural checks alone must hold: every corruption of every
// byte is an error or a plan that validates, and an accepted plan is safe to use and re-encode.
TEST(PlanRejectTest, CorruptionBehindAValidChecksumIsCaughtByTheDecoder) {
  const std::string good = Serialized();
  int accepted = 0;
  int rejected = 0;
  for (size_t at = 0; at + 4 < good.size(); ++at) {
    for (uint8_t flip : {0x01, 0x02, 0x10, 0x80, 0xff}) {
      std::string bytes = good;
      bytes[at] = static_cast<char>(bytes[at] ^ flip);
      FixChecksum(bytes);
      absl::StatusOr<Plan> plan = ParsePlanBytes(bytes, "m.plan");
      if (!plan.ok()) {
        ASSERT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_THAT(plan.status().message(), HasSubstr("m.plan: "));
        ++rejected;
        continue;
      }
      ++accepted;
      ASSERT_TRUE(ValidatePlan(*plan, "accepted").ok()) << "byte " << at;
      // Re-encoded and parsed again, it is the same plan: every weight byte reads back (under
      // ASan, reading each one proves it lies inside the file).
      absl::StatusOr<std::string> again = SerializePlan(*plan);
      ASSERT_TRUE(again.ok()) << "byte " << at << ": " << again.status();
      absl::StatusOr<Plan> reparsed = ParsePlanBytes(*again, "again.plan");
      ASSERT_TRUE(reparsed.ok()) << "byte " << at << ": " << reparsed.status();
      ASSERT_EQ(reparsed->weights.size(), plan->weights.size());
      for (size_t i = 0; i < plan->weights.size(); ++i) {
        const auto w = plan->Weight(static_cast<int32_t>(i));
        const auto v = reparsed->Weight(static_cast<int32_t>(i));
        EXPECT_TRUE(std::equal(w.begin(), w.end(), v.begin(), v.end()))
            << "byte " << at << ": weight " << i;
      }
    }
  }
  // Names, parameters and weight bytes are free to change; counts, ids and offsets are not.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, accepted / 4);
}

TEST(PlanRejectTest, HugeCountIsRejectedBeforeAllocating) {
  std::string bytes = Serialized();
  // The manifest starts with the target string: u32 length 3, "cpu", then 3 x 8 bytes of batch
  // and arena sizes, then the metadata count.
  const size_t metadata_count = kPlanHeaderBytes + 4 + 3 + 24;
  ASSERT_EQ(static_cast<uint8_t>(bytes[metadata_count]), 3);
  PutU32(bytes, metadata_count, 0xffffffffu);
  FixChecksum(bytes);
  absl::StatusOr<Plan> plan = ParsePlanBytes(bytes, "h.plan");
  EXPECT_THAT(plan.status().message(), HasSubstr("count 4294967295 larger than the remaining"));
  EXPECT_THAT(plan.status().message(), HasSubstr("recompile the model"));
}

}  // namespace
}  // namespace qcc::runtime
