// A small plan with every kind of buffer, step parameter and weight, and a field-by-field
// comparison, shared by the plan format tests.
#ifndef QCC_TESTS_RUNTIME_PLAN_TEST_UTIL_H_
#define QCC_TESTS_RUNTIME_PLAN_TEST_UTIL_H_

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/plan.h"

namespace qcc::runtime::plan_testing {

inline PlanBuffer MakeBuffer(std::string name, DType dtype, std::vector<int64_t> dims,
                             BufferKind kind, int64_t arena_offset = -1, int32_t weight = -1) {
  PlanBuffer b;
  b.name = std::move(name);
  b.dtype = dtype;
  b.dims = std::move(dims);
  b.kind = kind;
  b.arena_offset = arena_offset;
  b.weight = weight;
  return b;
}

/// input [-1,3,8,8] f32 -> conv (int8 weights, int32 bias) -> [-1,4,8,8] i8 (arena 0) -> pool ->
/// [-1,4] f32 (arena 2048) -> scale (f32 weight, an omitted optional input) -> logits [-1,10].
inline Plan MakeTestPlan() {
  Plan p;
  p.target = "cpu";
  p.batch_min = 1;
  p.batch_max = 8;
  p.metadata = {{"fingerprint", "0123abcd"}, {"precision", "int8"}, {"calib_method", "entropy"}};
  std::vector<int8_t> w(4 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(i * 37 - 100);
  const int32_t bias[4] = {-7, 1 << 20, 0, -(1 << 30)};
  std::vector<float> scale(10);
  for (size_t i = 0; i < scale.size(); ++i) scale[i] = 0.25f * i - 1.0f;
  p.AddWeight("conv1.weight", DType::kInt8, {4, 3, 3, 3}, w.data(), w.size());
  p.AddWeight("conv1.bias", DType::kInt32, {4}, bias, sizeof(bias));
  p.AddWeight("fc.scale", DType::kFloat32, {10}, scale.data(), scale.size() * 4);
  p.AddWeight("empty", DType::kFloat32, {0}, nullptr, 0);
  p.buffers = {
      MakeBuffer("input", DType::kFloat32, {-1, 3, 8, 8}, BufferKind::kInput),
      MakeBuffer("conv1.weight", DType::kInt8, {4, 3, 3, 3}, BufferKind::kWeight, -1, 0),
      MakeBuffer("conv1.bias", DType::kInt32, {4}, BufferKind::kWeight, -1, 1),
      MakeBuffer("conv1_out", DType::kInt8, {-1, 4, 8, 8}, BufferKind::kArena, 0),
      MakeBuffer("pool_out", DType::kFloat32, {-1, 4}, BufferKind::kArena, 2048),
      MakeBuffer("logits", DType::kFloat32, {-1, 10}, BufferKind::kOutput),
      MakeBuffer("fc.scale", DType::kFloat32, {10}, BufferKind::kWeight, -1, 2),
  };
  p.arena_bytes = 2048 + 128;
  PlanStep conv{7, "Conv_0", {0, 1, 2}, {3}, {1, 1, 1, 1, 0, 0, 0, 0}, {0.5f, -0.0f}};
  conv.floats.push_back(std::numeric_limits<float>::quiet_NaN());
  PlanStep pool{3, "GlobalAveragePool_1", {3}, {4}, {}, {}};
  PlanStep fc{9, "", {4, -1, 6}, {5}, {std::numeric_limits<int64_t>::min(), INT64_MAX}, {}};
  fc.floats.push_back(std::numeric_limits<float>::infinity());
  p.steps = {conv, pool, fc};
  p.inputs = {{"input", 0}};
  p.outputs = {{"logits", 5}};
  return p;
}

inline std::vector<uint32_t> FloatBits(const std::vector<float>& v) {
  std::vector<uint32_t> bits(v.size());
  if (!v.empty()) std::memcpy(bits.data(), v.data(), v.size() * 4);
  return bits;
}

/// Every field equal (floats bit for bit), weight bytes equal.
inline void ExpectPlansEqual(const Plan& a, const Plan& b) {
  EXPECT_EQ(a.target, b.target);
  EXPECT_EQ(a.batch_min, b.batch_min);
  EXPECT_EQ(a.batch_max, b.batch_max);
  EXPECT_EQ(a.arena_bytes, b.arena_bytes);
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "buffer " << i);
    EXPECT_EQ(a.buffers[i].name, b.buffers[i].name);
    EXPECT_EQ(a.buffers[i].dtype, b.buffers[i].dtype);
    EXPECT_EQ(a.buffers[i].dims, b.buffers[i].dims);
    EXPECT_EQ(a.buffers[i].kind, b.buffers[i].kind);
    EXPECT_EQ(a.buffers[i].arena_offset, b.buffers[i].arena_offset);
    EXPECT_EQ(a.buffers[i].weight, b.buffers[i].weight);
  }
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (size_t i = 0; i < a.steps.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "step " << i);
    EXPECT_EQ(a.steps[i].kind, b.steps[i].kind);
    EXPECT_EQ(a.steps[i].name, b.steps[i].name);
    EXPECT_EQ(a.steps[i].inputs, b.steps[i].inputs);
    EXPECT_EQ(a.steps[i].outputs, b.steps[i].outputs);
    EXPECT_EQ(a.steps[i].ints, b.steps[i].ints);
    EXPECT_EQ(FloatBits(a.steps[i].floats), FloatBits(b.steps[i].floats));
    EXPECT_EQ(a.steps[i].cuda_kernel, b.steps[i].cuda_kernel);
  }
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    EXPECT_EQ(a.inputs[i].name, b.inputs[i].name);
    EXPECT_EQ(a.inputs[i].buffer, b.inputs[i].buffer);
  }
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    EXPECT_EQ(a.outputs[i].name, b.outputs[i].name);
    EXPECT_EQ(a.outputs[i].buffer, b.outputs[i].buffer);
  }
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "weight " << i);
    EXPECT_EQ(a.weights[i].name, b.weights[i].name);
    EXPECT_EQ(a.weights[i].dtype, b.weights[i].dtype);
    EXPECT_EQ(a.weights[i].dims, b.weights[i].dims);
    EXPECT_EQ(a.weights[i].offset, b.weights[i].offset);
    EXPECT_EQ(a.weights[i].nbytes, b.weights[i].nbytes);
    const auto wa = a.Weight(static_cast<int32_t>(i));
    const auto wb = b.Weight(static_cast<int32_t>(i));
    EXPECT_EQ(std::vector<uint8_t>(wa.begin(), wa.end()),
              std::vector<uint8_t>(wb.begin(), wb.end()));
  }
}

}  // namespace qcc::runtime::plan_testing

#endif  // QCC_TESTS_RUNTIME_PLAN_TEST_UTIL_H_
