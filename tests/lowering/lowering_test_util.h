// Helpers shared by the lowering tests.
#ifndef QCC_TESTS_LOWERING_LOWERING_TEST_UTIL_H_
#define QCC_TESTS_LOWERING_LOWERING_TEST_UTIL_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backend_cpu/lowering.h"
#include "gtest/gtest.h"
#include "ir/graph.h"
#include "passes/quantize.h"
#include "passes/realize_int8.h"
#include "runtime/engine.h"
#include "runtime/plan.h"
#include "runtime/steps.h"
#include "support/tensor.h"
#include "tests/testing/tensor_compare.h"

namespace qcc::testing {

/// The number of `kind` steps in `plan`.
inline int CountSteps(const runtime::Plan& plan, runtime::StepKind kind) {
  int n = 0;
  for (const runtime::PlanStep& s : plan.steps) n += s.kind == static_cast<uint32_t>(kind);
  return n;
}

/// A seeded f32 tensor of values in [-scale, scale].
inline Tensor Seeded(Dims dims, float scale, int seed) {
  Tensor t(DType::kFloat32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data<float>()[i] = scale * static_cast<float>((i * 37 + seed * 11) % 23 - 11) / 11.0f;
  }
  return t;
}

/// The plan of `g` quantized with `ranges` (AssignPrecision, then RealizeInt8; a tensor without
/// a range stays in float) and lowered with `options`; an empty plan, with a test failure, when
/// a step fails.
inline runtime::Plan LowerQuantized(const ir::Graph& g,
                                    const std::map<std::string, passes::TensorRange>& ranges,
                                    const cpu::LowerOptions& options) {
  absl::StatusOr<passes::QuantDecision> d = passes::AssignPrecision(g, ranges, {});
  EXPECT_TRUE(d.ok()) << d.status();
  if (!d.ok()) return runtime::Plan{};
  absl::StatusOr<std::unique_ptr<ir::Graph>> quantized = passes::RealizeInt8(g, *d);
  EXPECT_TRUE(quantized.ok()) << quantized.status();
  if (!quantized.ok()) return runtime::Plan{};
  absl::StatusOr<runtime::Plan> plan = cpu::LowerToCpuPlan(**quantized, options);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *std::move(plan) : runtime::Plan{};
}

/// A fused plan's outputs equal the unfused plan's, bit for bit, on 1 and 2 threads at each of
/// `batches`, the one input from input_at(batch).
template <typename InputAt>
void ExpectSamePlanOutputs(const runtime::Plan& fused, const runtime::Plan& unfused,
                           std::initializer_list<int64_t> batches, InputAt input_at) {
  for (int threads : {1, 2}) {
    auto a = runtime::Engine::Create(fused, runtime::EngineOptions{threads});
    auto b = runtime::Engine::Create(unfused, runtime::EngineOptions{threads});
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    for (int64_t batch : batches) {
      SCOPED_TRACE(absl::StrCat("threads ", threads, " batch ", batch));
      const Tensor x = input_at(batch);
      absl::StatusOr<std::vector<Tensor>> got = (*a)->CreateContext()->Run({x});
      absl::StatusOr<std::vector<Tensor>> want = (*b)->CreateContext()->Run({x});
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_EQ(got->size(), want->size());
      for (size_t i = 0; i < got->size(); ++i) {
        EXPECT_EQ(CompareTensors((*got)[i], (*want)[i], 0, 0), "") << "output " << i;
      }
    }
  }
}

}  // namespace qcc::testing

#endif  // QCC_TESTS_LOWERING_LOWERING_TEST_UTIL_H_
