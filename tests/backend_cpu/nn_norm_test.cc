// BatchNormalization, InstanceNormalization and LayerNormalization against formulas written
// out here (numpy-style loops) and ONNX's documented BatchNormalization example.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/backend_cpu/nn_testing.h"
#include "tests/testing/op_test_util.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {
namespace {

Tensor PositiveF32(Dims dims, uint32_t seed) {
  Tensor t = RandomF32(std::move(dims), seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::fabs(t.data<float>()[i]) + 0.1f;
  return t;
}

// ONNX test_batchnorm_example: x [[[[-1,0,1]],[[2,3,4]]]], s [1, 1.5], b [0, 1], mean [0, 3],
// var [1, 1.5], eps 1e-5.
TEST(NnNormTest, BatchNormHandValues) {
  const Tensor x = F32({1, 2, 1, 3}, {-1, 0, 1, 2, 3, 4});
  ir::BatchNormAttrs a;
  auto y = RunSingleOp(ir::OpKind::kBatchNormalization, a,
                       {{x},
                        {F32({2}, {1, 1.5}), true},
                        {F32({2}, {0, 1}), true},
                        {F32({2}, {0, 3}), true},
                        {F32({2}, {1, 1.5}), true}});
  ASSERT_TRUE(y.ok()) << y.status();
  const float k0 = 1 / std::sqrt(1 + 1e-5f), k1 = 1.5f / std::sqrt(1.5f + 1e-5f);
  EXPECT_EQ(CompareTensors((*y)[0], F32({1, 2, 1, 3}, {-k0, 0, k0, 1 - k1, 1, 1 + k1}), 1e-6, 1e-6),
            "");
}

TEST(NnNormTest, BatchNormMatchesFormula) {
  for (const Dims& dims : {Dims{3, 5, 4, 3}, Dims{2, 7}, Dims{2, 3, 2, 2, 3}}) {
    const int64_t c = dims[1], size = NumElements(dims) / (dims[0] * c);
    const Tensor x = RandomF32(dims, 31), s = RandomF32({c}, 32), b = RandomF32({c}, 33);
    const Tensor mean = RandomF32({c}, 34), var = PositiveF32({c}, 35);
    ir::BatchNormAttrs a;
    a.epsilon = 1e-3f;
    auto y = RunSingleOp(ir::OpKind::kBatchNormalization, a,
                         {{x}, {s, true}, {b, true}, {mean, true}, {var, true}});
    ASSERT_TRUE(y.ok()) << y.status();
    Tensor want(DType::kFloat32, dims);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const int64_t ch = i / size % c;
      want.data<float>()[i] = static_cast<float>(
          (x.data<float>()[i] - mean.data<float>()[ch]) /
              std::sqrt(double{var.data<float>()[ch]} + 1e-3f) * s.data<float>()[ch] +
          b.data<float>()[ch]);
    }
    EXPECT_EQ(CompareTensors((*y)[0], want, 1e-5, 1e-6), "") << DimsToString(dims);
  }
}

TEST(NnNormTest, BatchNormTrainingIsUnsupported) {
  const Tensor x = RandomF32({1, 2, 2, 2}, 36), v = PositiveF32({2}, 37);
  ir::BatchNormAttrs a;
  a.training_mode = 1;
  auto y = RunSingleOp(ir::OpKind::kBatchNormalization, a,
                       {{x}, {v, true}, {v, true}, {v, true}, {v, true}});
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kUnimplemented) << y.status();
  a.training_mode = 0;
  y = RunSingleOp(ir::OpKind::kBatchNormalization, a,
                  {{x}, {v, true}, {v, true}, {v, true}, {v, true}}, 3);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), absl::StatusCode::kUnimplemented) << y.status();
  // A statistics vector of the wrong extent is a bad model, named in the error.
  y = RunSingleOp(ir::OpKind::kBatchNormalization, a,
                  {{x}, {v, true}, {v, true}, {PositiveF32({3}, 38), true}, {v, true}});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("input_mean"), absl::string_view::npos) << y.status();
}

TEST(NnNormTest, InstanceNormMatchesFormula) {
  const Dims dims = {2, 3, 5, 4};
  const Tensor x = RandomF32(dims, 41), s = RandomF32({3}, 42), b = RandomF32({3}, 43);
  ir::EpsilonAttrs a;
  a.epsilon = 1e-2f;
  auto y = RunSingleOp(ir::OpKind::kInstanceNormalization, a, {{x}, {s, true}, {b, true}});
  ASSERT_TRUE(y.ok()) << y.status();
  Tensor want(DType::kFloat32, dims);
  const int64_t size = 20;
  for (int64_t p = 0; p < 6; ++p) {
    const float* xp = x.data<float>() + p * size;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < size; ++i) mean += xp[i] / size;
    for (int64_t i = 0; i < size; ++i) var += (xp[i] - mean) * (xp[i] - mean) / size;
    for (int64_t i = 0; i < size; ++i) {
      want.data<float>()[p * size + i] = static_cast<float>(
          (xp[i] - mean) / std::sqrt(var + 1e-2) * s.data<float>()[p % 3] + b.data<float>()[p % 3]);
    }
  }
  EXPECT_EQ(CompareTensors((*y)[0], want, 1e-5, 1e-5), "");
}

TEST(NnNormTest, LayerNormMatchesFormulaWithStatistics) {
  struct Case {
    Dims x;
    int64_t axis;
    Dims scale;
    bool bias;
  };
  for (const Case& c : {Case{{2, 3, 4}, -1, {4}, true}, Case{{2, 3, 4}, 1, {3, 4}, true},
                        Case{{3, 5}, 0, {3, 5}, false}, Case{{2, 2, 3, 4}, 2, {1, 4}, true}}) {
    SCOPED_TRACE(DimsToString(c.x));
    const Tensor x = RandomF32(c.x, 51), s = RandomF32(c.scale, 52);
    const Tensor b = c.bias ? RandomF32(c.scale, 53) : Tensor();
    ir::LayerNormAttrs a;
    a.axis = c.axis;
    a.epsilon = 1e-4f;
    auto y = RunSingleOp(ir::OpKind::kLayerNormalization, a, {{x}, {s, true}, {b, true}}, 3);
    ASSERT_TRUE(y.ok()) << y.status();
    const int64_t axis = c.axis < 0 ? c.axis + x.rank() : c.axis;
    int64_t cols = 1;
    for (int64_t i = axis; i < x.rank(); ++i) cols *= x.dim(i);
    const int64_t rows = x.numel() / cols;
    Tensor want(DType::kFloat32, c.x);
    Dims stat_dims(c.x.begin(), c.x.begin() + axis);
    stat_dims.resize(c.x.size(), 1);
    Tensor want_mean(DType::kFloat32, stat_dims), want_inv(DType::kFloat32, stat_dims);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data<float>() + r * cols;
      double mean = 0, var = 0;
      for (int64_t j = 0; j < cols; ++j) mean += xr[j] / double(cols);
      for (int64_t j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean) / cols;
      const double inv = 1 / std::sqrt(var + 1e-4);
      for (int64_t j = 0; j < cols; ++j) {
        // Scale and bias broadcast from the right: index j modulo their element count.
        const int64_t sj = j % s.numel();
        want.data<float>()[r * cols + j] = static_cast<float>(
            (xr[j] - mean) * inv * s.data<float>()[sj] + (c.bias ? b.data<float>()[sj] : 0.0));
      }
      want_mean.data<float>()[r] = static_cast<float>(mean);
      want_inv.data<float>()[r] = static_cast<float>(inv);
    }
    EXPECT_EQ(CompareTensors((*y)[0], want, 1e-5, 1e-5), "");
    EXPECT_EQ(CompareTensors((*y)[1], want_mean, 1e-5, 1e-6), "");
    EXPECT_EQ(CompareTensors((*y)[2], want_inv, 1e-5, 1e-6), "");
  }
}

TEST(NnNormTest, LayerNormRejectsBadScale) {
  const Tensor x = RandomF32({2, 3, 4}, 54);
  ir::LayerNormAttrs a;
  auto y = RunSingleOp(ir::OpKind::kLayerNormalization, a, {{x}, {RandomF32({3}, 55), true}});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("Scale"), absl::string_view::npos) << y.status();
  a.axis = 3;
  y = RunSingleOp(ir::OpKind::kLayerNormalization, a, {{x}, {RandomF32({4}, 56), true}});
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("axis"), absl::string_view::npos) << y.status();
}

}  // namespace
}  // namespace qcc::testing
