#include "runtime/plan_format.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/plan.h"
#include "tests/runtime/plan_test_util.h"

namespace qcc::runtime {
namespace {

using ::qcc::runtime::plan_testing::ExpectPlansEqual;
using ::qcc::runtime::plan_testing::MakeTestPlan;
using ::testing::HasSubstr;

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kPlanAlignment == 0; }

class PlanFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("qcc_plan_format_test_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }
  std::vector<std::string> Listing() const {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }

  std::filesystem::path dir_;
};

TEST_F(PlanFormatTest, RoundTripThroughFileKeepsEveryFieldAndAlignsWeights) {
  const Plan plan = MakeTestPlan();
  ASSERT_TRUE(ValidatePlan(plan, "test").ok());
  const std::string path = Path("m.plan");
  ASSERT_TRUE(WritePlan(plan, path).ok());
  absl::StatusOr<Plan> read = ReadPlan(path);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectPlansEqual(plan, *read);
  EXPECT_TRUE(read->weight_data.is_view());
  EXPECT_TRUE(Aligned(read->weight_data.data()));
  for (size_t i = 0; i < read->weights.size(); ++i) {
    EXPECT_TRUE(Aligned(read->Weight(static_cast<int32_t>(i)).data())) << "weight " << i;
  }
  // Hand-checked bytes: the int32 bias and the fp32 scale read back as values.
  int32_t bias[4];
  std::memcpy(bias, read->Weight(1).data(), sizeof(bias));
  EXPECT_EQ(bias[1], 1 << 20);
  EXPECT_EQ(bias[3], -(1 << 30));
  float scale9 = 0;
  std::memcpy(&scale9, read->Weight(2).data() + 9 * 4, 4);
  EXPECT_EQ(scale9, 1.25f);
  EXPECT_EQ(Listing(), std::vector<std::string>{"m.plan"});  // no temporary left
}

TEST_F(PlanFormatTest, LayoutMatchesTheDocumentedHeader) {
  absl::StatusOr<std::string> bytes = SerializePlan(MakeTestPlan());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  const auto* b = reinterpret_cast<const uint8_t*>(bytes->data());
  auto u64 = [&](size_t at) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{b[at + i]} << (8 * i);
    return v;
  };
  EXPECT_EQ(std::memcmp(b, "QCCPLAN\0", 8), 0);
  EXPECT_EQ(b[8], kPlanFormatVersion);
  const uint64_t manifest = u64(16), weights_offset = u64(24), weights_size = u64(32);
  EXPECT_EQ(weights_offset % 64, 0u);
  EXPECT_GE(weights_offset, 64 + manifest);
  EXPECT_LT(weights_offset, 64 + manifest + 64);
  // Weights at 0 (108 bytes), 128 (16), 192 (40) and 256 (0 bytes): the section ends at 256.
  EXPECT_EQ(weights_size, 256u);
  EXPECT_EQ(u64(40), bytes->size());
  EXPECT_EQ(bytes->size(), weights_offset + weights_size + 4);
  uint32_t stored = 0;
  std::memcpy(&stored, b + bytes->size() - 4, 4);
  EXPECT_EQ(stored, PlanChecksum(b, bytes->size() - 4));
}

TEST_F(PlanFormatTest, SerializeIsDeterministicAndParseSerializeIsIdentity) {
  absl::StatusOr<std::string> a = SerializePlan(MakeTestPlan());
  absl::StatusOr<std::string> b = SerializePlan(MakeTestPlan());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  absl::StatusOr<Plan> parsed = ParsePlanBytes(*a, "memory");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<std::string> again = SerializePlan(*parsed);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *a);
}

TEST_F(PlanFormatTest, UnalignedBytesAreCopiedSoWeightsStayAligned) {
  absl::StatusOr<std::string> bytes = SerializePlan(MakeTestPlan());
  ASSERT_TRUE(bytes.ok());
  std::shared_ptr<uint8_t> raw(new uint8_t[bytes->size() + 1], std::default_delete<uint8_t[]>());
  std::memcpy(raw.get() + 1, bytes->data(), bytes->size());
  std::shared_ptr<const uint8_t> shifted(raw, raw.get() + 1);
  absl::StatusOr<Plan> plan = ParsePlan(shifted, bytes->size(), "shifted");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(Aligned(plan->Weight(0).data()));
  ExpectPlansEqual(MakeTestPlan(), *plan);
}

TEST_F(PlanFormatTest, AddWeightToAReadPlanCopiesTheViewFirst) {
  absl::StatusOr<std::string> bytes = SerializePlan(MakeTestPlan());
  ASSERT_TRUE(bytes.ok());
  absl::StatusOr<Plan> plan = ParsePlanBytes(*bytes, "memory");
  ASSERT_TRUE(plan.ok());
  const Plan view = *plan;  // shares the file bytes
  const int64_t extra[3] = {5, -6, 7};
  const int32_t id = plan->AddWeight("extra", DType::kInt64, {3}, extra, sizeof(extra));
  EXPECT_FALSE(plan->weight_data.is_view());
  EXPECT_EQ(plan->weights[id].offset % 64, 0u);
  EXPECT_EQ(std::memcmp(plan->Weight(id).data(), extra, sizeof(extra)), 0);
  EXPECT_TRUE(view.weight_data.is_view());
  for (int32_t i = 0; i < 4; ++i) {
    ASSERT_EQ(plan->Weight(i).size(), view.Weight(i).size());
    EXPECT_EQ(std::memcmp(plan->Weight(i).data(), view.Weight(i).data(), view.Weight(i).size()), 0);
  }
  EXPECT_TRUE(ValidatePlan(*plan, "extended").ok());
}

TEST_F(PlanFormatTest, MissingFileIsNotFoundNamingThePath) {
  const std::string path = Path("nope.plan");
  absl::StatusOr<Plan> plan = ReadPlan(path);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(plan.status().message(), HasSubstr(path));
}

TEST_F(PlanFormatTest, DirectoryIsRejected) {
  absl::StatusOr<Plan> plan = ReadPlan(dir_.string());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(plan.status().message(), HasSubstr("not a regular file"));
}

TEST_F(PlanFormatTest, WriteIntoMissingFolderFailsAndLeavesNothing) {
  const std::string path = Path("missing/m.plan");
  absl::Status s = WritePlan(MakeTestPlan(), path);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr(path));
  EXPECT_TRUE(Listing().empty());
}

TEST_F(PlanFormatTest, InvalidPlanIsNotWrittenAndTheOldFileSurvives) {
  const std::string path = Path("m.plan");
  ASSERT_TRUE(WritePlan(MakeTestPlan(), path).ok());
  const auto before = std::filesystem::file_size(path);
  Plan bad = MakeTestPlan();
  bad.steps[1].inputs = {99};
  absl::Status s = WritePlan(bad, path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("input buffer 99 out of range"));
  EXPECT_EQ(Listing(), std::vector<std::string>{"m.plan"});
  EXPECT_EQ(std::filesystem::file_size(path), before);
  EXPECT_TRUE(ReadPlan(path).ok());
}

// Each mutation breaks one invariant; SerializePlan refuses it with a message naming it.
TEST_F(PlanFormatTest, ValidationNamesTheBrokenInvariant) {
  struct Case {
    const char* expect;
    void (*mutate)(Plan&);
  };
  const Case cases[] = {
      {"invalid batch range", [](Plan& p) { p.batch_min = 9; }},
      {"outside the arena", [](Plan& p) { p.arena_bytes = 2048 + 64; }},
      {"misaligned", [](Plan& p) { p.buffers[4].arena_offset = 2040; }},
      {"invalid extent -1 on axis 1", [](Plan& p) { p.buffers[3].dims[1] = -1; }},
      {"invalid dtype", [](Plan& p) { p.buffers[3].dtype = DType::kUndefined; }},
      {"weight 7 out of range", [](Plan& p) { p.buffers[1].weight = 7; }},
      {"differs from weight",
       [](Plan& p) {
         p.buffers[1].dims = {4, 3, 3, 2};
       }},
      {"do not match its dtype and dims", [](Plan& p) { p.weights[0].nbytes = 100; }},
      {"outside the weights section", [](Plan& p) { p.weights[2].offset = 256; }},
      {"misaligned", [](Plan& p) { p.weights[3].offset = 8; }},
      {"writes weight buffer", [](Plan& p) { p.steps[0].outputs = {1}; }},
      {"output buffer -1", [](Plan& p) { p.steps[0].outputs = {-1}; }},
      {"has no binding", [](Plan& p) { p.inputs.clear(); }},
      {"bound twice",
       [](Plan& p) {
         p.outputs.push_back({"logits", 5});
       }},
      {"is an arena buffer", [](Plan& p) { p.outputs[0].buffer = 3; }},
      {"invalid name", [](Plan& p) { p.inputs[0].name = ""; }},
      {"invalid metadata", [](Plan& p) { p.metadata[""] = "x"; }},
      {"invalid target", [](Plan& p) { p.target = ""; }},
      {"CUDA kernel 4 in a plan for target 'cpu'",
       [](Plan& p) { p.steps[0].cuda_kernel = CudaKernel::kIm2colGemm; }},
      {"CUDA kernel 0 in a plan for target 'cuda'", [](Plan& p) { p.target = "cuda"; }},
      {"CUDA kernel 10 in a plan for target 'cuda'",
       [](Plan& p) {
         p.target = "cuda";
         for (PlanStep& s : p.steps) s.cuda_kernel = CudaKernel::kNumKernels;
       }},
  };
  for (const Case& c : cases) {
    Plan p = MakeTestPlan();
    c.mutate(p);
    absl::StatusOr<std::string> s = SerializePlan(p);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << c.expect;
    EXPECT_THAT(s.status().message(), HasSubstr(c.expect));
  }
}

// A "cuda" plan stores each step's kernel choice after the bindings (one byte each); a plan of
// another target stores none, so its bytes do not depend on the field.
TEST_F(PlanFormatTest, CudaKernelChoicesRoundTripInCudaPlansOnly) {
  const Plan cpu = MakeTestPlan();
  Plan cuda = cpu;
  cuda.target = "cuda";
  for (size_t i = 0; i < cuda.steps.size(); ++i) {
    cuda.steps[i].cuda_kernel = i % 2 == 0 ? CudaKernel::kIm2colHalfGemm : CudaKernel::kIndex;
  }
  absl::StatusOr<std::string> cpu_bytes = SerializePlan(cpu);
  absl::StatusOr<std::string> cuda_bytes = SerializePlan(cuda);
  ASSERT_TRUE(cpu_bytes.ok()) << cpu_bytes.status();
  ASSERT_TRUE(cuda_bytes.ok()) << cuda_bytes.status();
  absl::StatusOr<Plan> back = ParsePlanBytes(*cuda_bytes, "cuda");
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectPlansEqual(cuda, *back);
  // The target name grows by 1 byte, the section by 4 + one per step (both before the weights'
  // 64-byte padding, so compare the manifest sizes in the headers).
  uint64_t cpu_manifest = 0, cuda_manifest = 0;
  std::memcpy(&cpu_manifest, cpu_bytes->data() + 16, 8);
  std::memcpy(&cuda_manifest, cuda_bytes->data() + 16, 8);
  EXPECT_EQ(cuda_manifest, cpu_manifest + 1 + 4 + cuda.steps.size());
}

TEST_F(PlanFormatTest, InvalidCudaKernelByteIsACorruptPlan) {
  Plan cuda = MakeTestPlan();
  cuda.target = "cuda";
  for (PlanStep& s : cuda.steps) s.cuda_kernel = CudaKernel::kGemm;
  absl::StatusOr<std::string> bytes = SerializePlan(cuda);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  uint64_t manifest = 0;
  std::memcpy(&manifest, bytes->data() + 16, 8);
  // The manifest's last byte is the last step's kernel; 200 names none (the CRC is rewritten so
  // that the manifest decoder, not the checksum, rejects it).
  std::string bad = *bytes;
  const size_t last = kPlanHeaderBytes + manifest - 1;
  ASSERT_EQ(static_cast<uint8_t>(bad[last]), static_cast<uint8_t>(CudaKernel::kGemm));
  bad[last] = static_cast<char>(200);
  const uint32_t crc = PlanChecksum(reinterpret_cast<const uint8_t*>(bad.data()), bad.size() - 4);
  std::memcpy(&bad[bad.size() - 4], &crc, 4);
  absl::StatusOr<Plan> back = ParsePlanBytes(bad, "bad.plan");
  EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(back.status().message(), HasSubstr("invalid CUDA kernel 200"));
}

TEST_F(PlanFormatTest, EmptyPlanRoundTrips) {
  Plan p;
  absl::StatusOr<std::string> bytes = SerializePlan(p);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  absl::StatusOr<Plan> back = ParsePlanBytes(*bytes, "empty");
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectPlansEqual(p, *back);
  EXPECT_EQ(back->weight_data.size(), 0u);
}

}  // namespace
}  // namespace qcc::runtime
