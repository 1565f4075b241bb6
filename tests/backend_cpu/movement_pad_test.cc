// CPU Pad in all four modes, with cropping (negative) pads, the axes input, a constant value
// and several element types. Expected values follow numpy.pad (ONNX's reference), and crop
// before padding where pads are negative (as ONNX Runtime does).
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "support/status.h"
#include "tests/testing/op_test_util.h"

namespace qcc {
namespace {

using ir::OpKind;
using ir::PadMode;
using testing::F32;
using testing::I64;
using testing::OpInput;
using testing::RunSingleOp;
using V = std::vector<double>;

std::vector<double> Values(const Tensor& t) {
  std::vector<double> v(t.numel());
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.GetAsDouble(i);
  return v;
}

/// Pads `x` with `pads` (and optional constant value and axes) in `mode`.
absl::StatusOr<Tensor> Pad(PadMode mode, const Tensor& x, std::vector<int64_t> pads,
                           Tensor value = Tensor(), std::vector<int64_t> axes = {}) {
  std::vector<OpInput> in = {{x}, {I64({static_cast<int64_t>(pads.size())}, pads), true}};
  in.push_back({value, true});
  if (!axes.empty()) in.push_back({I64({static_cast<int64_t>(axes.size())}, axes), true});
  QCC_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunSingleOp(OpKind::kPad, ir::PadAttrs{mode}, in));
  return out[0];
}

/// Pads a 1-D f32 tensor and returns the values (empty on error, with a failure).
V Pad1D(PadMode mode, const V& x, int64_t begin, int64_t end) {
  Tensor t(DType::kFloat32, {static_cast<int64_t>(x.size())});
  for (size_t i = 0; i < x.size(); ++i) t.data<float>()[i] = static_cast<float>(x[i]);
  auto out = Pad(mode, t, {begin, end});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? Values(*out) : V{};
}

TEST(MovementPad, OnnxExamplesReflectEdgeWrap) {
  const Tensor x = F32({3, 2}, {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f});
  auto reflect = Pad(PadMode::kReflect, x, {0, 2, 0, 0});
  ASSERT_TRUE(reflect.ok()) << reflect.status();
  EXPECT_EQ(Values(*reflect), Values(F32({3, 4}, {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f,
                                                  4.5f, 5.7f, 4.5f, 5.7f})));
  auto edge = Pad(PadMode::kEdge, x, {0, 2, 0, 0});
  ASSERT_TRUE(edge.ok());
  EXPECT_EQ(Values(*edge), Values(F32({3, 4}, {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f, 4.5f,
                                               4.5f, 4.5f, 5.7f})));
  auto wrap = Pad(PadMode::kWrap, x, {2, 1, 1, 1});
  ASSERT_TRUE(wrap.ok());
  EXPECT_EQ(wrap->dims(), (Dims{6, 4}));
  EXPECT_EQ(Values(*wrap), Values(F32({6, 4}, {3.4f, 2.3f, 3.4f, 2.3f, 5.7f, 4.5f, 5.7f, 4.5f,
                                               1.2f, 1.0f, 1.2f, 1.0f, 3.4f, 2.3f, 3.4f, 2.3f,
                                               5.7f, 4.5f, 5.7f, 4.5f, 1.2f, 1.0f, 1.2f, 1.0f})));
}

TEST(MovementPad, ConstantValueAndDefaultZero) {
  const Tensor x = F32({2, 2}, {1, 2, 3, 4});
  auto out = Pad(PadMode::kConstant, x, {0, 1, 1, 0}, F32({}, {-7}));
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->dims(), (Dims{3, 3}));
  EXPECT_EQ(Values(*out), (V{-7, 1, 2, -7, 3, 4, -7, -7, -7}));
  out = Pad(PadMode::kConstant, x, {1, 0, 0, 0});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(Values(*out), (V{0, 0, 1, 2, 3, 4}));
}

TEST(MovementPad, PadsLargerThanTheAxisRepeat) {
  // numpy.pad repeats the mirror / period as often as needed.
  EXPECT_EQ(Pad1D(PadMode::kReflect, {1, 2, 3, 4}, 5, 6),
            (V{2, 3, 4, 3, 2, 1, 2, 3, 4, 3, 2, 1, 2, 3, 4}));
  EXPECT_EQ(Pad1D(PadMode::kWrap, {1, 2, 3, 4}, 5, 6),
            (V{4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2}));
  EXPECT_EQ(Pad1D(PadMode::kEdge, {1, 2}, 3, 2), (V{1, 1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(Pad1D(PadMode::kReflect, {5}, 2, 1), (V{5, 5, 5, 5}));
}

TEST(MovementPad, NegativePadsCropBeforePadding) {
  const V x = {1, 2, 3, 4};
  auto c = Pad(PadMode::kConstant, F32({4}, {1, 2, 3, 4}), {-1, 2}, F32({}, {9}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(Values(*c), (V{2, 3, 4, 9, 9}));
  EXPECT_EQ(Pad1D(PadMode::kEdge, x, -1, 2), (V{2, 3, 4, 4, 4}));
  EXPECT_EQ(Pad1D(PadMode::kReflect, x, 2, -1), (V{3, 2, 1, 2, 3}));
  EXPECT_EQ(Pad1D(PadMode::kWrap, x, 2, -1), (V{2, 3, 1, 2, 3}));
  EXPECT_EQ(Pad1D(PadMode::kConstant, x, -4, 0), V{});

  // 2-D: rows cropped at the end then reflected at the start; columns cropped at the start
  // then reflected at the end. Rows [0,1] -> [1,0,1]; columns [1,2,3] -> [1,2,3,2,1,2].
  Tensor m(DType::kFloat32, {3, 4});
  for (int i = 0; i < 12; ++i) m.data<float>()[i] = static_cast<float>(i);
  auto r = Pad(PadMode::kReflect, m, {1, -1, -1, 3});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->dims(), (Dims{3, 6}));
  EXPECT_EQ(Values(*r), (V{5, 6, 7, 6, 5, 6, 1, 2, 3, 2, 1, 2, 5, 6, 7, 6, 5, 6}));

  auto empty = Pad(PadMode::kEdge, F32({2}, {1, 2}), {-2, 1});
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MovementPad, AxesInputAndOtherTypes) {
  // Pad only the last axis, edge mode, int32 data: [[0,1,2,3],[4,5,6,7],[8,9,10,11]].
  Tensor m(DType::kInt32, {3, 4});
  for (int i = 0; i < 12; ++i) m.data<int32_t>()[i] = i;
  auto out = Pad(PadMode::kEdge, m, {2, 1}, Tensor(), {-1});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->dtype(), DType::kInt32);
  EXPECT_EQ(Values(*out), (V{0, 0, 0, 1, 2, 3, 3, 4, 4, 4, 5, 6, 7, 7, 8, 8, 8, 9, 10, 11, 11}));

  // fp16 with an fp16 constant value: the bits move unchanged.
  const Tensor h = CastTensor(F32({2}, {1.5f, -2.0f}), DType::kFloat16);
  const Tensor v = CastTensor(F32({}, {0.25f}), DType::kFloat16);
  out = Pad(PadMode::kConstant, h, {1, 1}, v);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->dtype(), DType::kFloat16);
  EXPECT_EQ(Values(*out), (V{0.25, 1.5, -2.0, 0.25}));

  // uint8 reflect across both axes of a 2x3 tensor.
  const Tensor u = CastTensor(F32({2, 3}, {1, 2, 3, 4, 5, 6}), DType::kUInt8);
  out = Pad(PadMode::kReflect, u, {1, 1, 0, 0});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Values(*out), (V{5, 4, 5, 6, 2, 1, 2, 3, 5, 4, 5, 6}));
}

}  // namespace
}  // namespace qcc
