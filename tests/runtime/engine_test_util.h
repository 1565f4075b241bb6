// Building small plans by hand for the engine tests: buffers, weights and steps with encoded
// parameters, a serialize + parse round trip (so every test also exercises the file format),
// and deterministic test data.
#ifndef QCC_TESTS_RUNTIME_ENGINE_TEST_UTIL_H_
#define QCC_TESTS_RUNTIME_ENGINE_TEST_UTIL_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/engine.h"
#include "runtime/memory_plan.h"
#include "runtime/plan.h"
#include "runtime/plan_format.h"
#include "runtime/steps.h"
#include "support/tensor.h"

namespace qcc::runtime::engine_testing {

/// Short dtype names for the plans tests build.
inline constexpr DType kF32 = DType::kFloat32;
inline constexpr DType kI8 = DType::kInt8;
inline constexpr DType kI32 = DType::kInt32;
inline constexpr DType kI64 = DType::kInt64;

/// Builds a Plan: arena buffers get consecutive 64-byte aligned offsets (no reuse).
class PlanBuilder {
 public:
  explicit PlanBuilder(int64_t batch_min = 1, int64_t batch_max = 1) {
    plan_.batch_min = batch_min;
    plan_.batch_max = batch_max;
  }

  int32_t Input(std::string name, DType dtype, std::vector<int64_t> dims) {
    const int32_t id = Add(name, dtype, std::move(dims), BufferKind::kInput);
    plan_.inputs.push_back({std::move(name), id});
    return id;
  }
  int32_t Output(std::string name, DType dtype, std::vector<int64_t> dims) {
    const int32_t id = Add(name, dtype, std::move(dims), BufferKind::kOutput);
    plan_.outputs.push_back({std::move(name), id});
    return id;
  }
  int32_t Arena(std::string name, DType dtype, std::vector<int64_t> dims) {
    const int32_t id = Add(std::move(name), dtype, std::move(dims), BufferKind::kArena);
    PlanBuffer& b = plan_.buffers[id];
    b.arena_offset = static_cast<int64_t>(plan_.arena_bytes);
    plan_.arena_bytes += (BufferBytes(b, plan_.batch_max).value_or(0) + 63) / 64 * 64;
    return id;
  }
  template <typename T>
  int32_t Weight(std::string name, DType dtype, std::vector<int64_t> dims,
                 const std::vector<T>& values) {
    const int32_t w = plan_.AddWeight(name, dtype, dims, values.data(), values.size() * sizeof(T));
    const int32_t id = Add(std::move(name), dtype, std::move(dims), BufferKind::kWeight);
    plan_.buffers[id].weight = w;
    return id;
  }
  template <typename P>
  void Step(StepKind kind, std::string name, std::vector<int32_t> inputs,
            std::vector<int32_t> outputs, const P& params) {
    PlanStep s;
    s.kind = static_cast<uint32_t>(kind);
    s.name = std::move(name);
    s.inputs = std::move(inputs);
    s.outputs = std::move(outputs);
    EncodeParams(params, &s);
    plan_.steps.push_back(std::move(s));
  }
  Plan& plan() { return plan_; }

 private:
  int32_t Add(std::string name, DType dtype, std::vector<int64_t> dims, BufferKind kind) {
    PlanBuffer b;
    b.name = std::move(name);
    b.dtype = dtype;
    b.dims = std::move(dims);
    b.kind = kind;
    plan_.buffers.push_back(std::move(b));
    return static_cast<int32_t>(plan_.buffers.size() - 1);
  }

  Plan plan_;
};

/// Re-assigns the arena offsets with PlanMemory (buffers live from the step that first writes
/// them to the last step that reads them), so tests run with real arena reuse.
inline void PlanArena(Plan& plan) {
  std::vector<BufferLifetime> lifetimes;
  std::vector<int32_t> ids;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    if (plan.buffers[i].kind != BufferKind::kArena) continue;
    BufferLifetime life{BufferBytes(plan.buffers[i], plan.batch_max).value_or(0), -1, -1};
    for (size_t s = 0; s < plan.steps.size(); ++s) {
      for (const auto* operands : {&plan.steps[s].inputs, &plan.steps[s].outputs}) {
        for (int32_t b : *operands) {
          if (b != static_cast<int32_t>(i)) continue;
          if (life.first_step < 0) life.first_step = static_cast<int32_t>(s);
          life.last_step = static_cast<int32_t>(s);
        }
      }
    }
    if (life.first_step < 0) life.first_step = life.last_step = 0;
    lifetimes.push_back(life);
    ids.push_back(static_cast<int32_t>(i));
  }
  absl::StatusOr<MemoryPlan> memory = PlanMemory(lifetimes);
  ASSERT_TRUE(memory.ok()) << memory.status();
  for (size_t j = 0; j < ids.size(); ++j) {
    plan.buffers[ids[j]].arena_offset = static_cast<int64_t>(memory->offsets[j]);
  }
  plan.arena_bytes = memory->arena_bytes;
}

/// The plan after SerializePlan + ParsePlanBytes.
inline Plan RoundTrip(const Plan& plan) {
  absl::StatusOr<std::string> bytes = SerializePlan(plan);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  if (!bytes.ok()) return plan;
  absl::StatusOr<Plan> parsed = ParsePlanBytes(*bytes, "test plan");
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  return parsed.ok() ? std::move(*parsed) : plan;
}

/// An engine for `plan` after a file-format round trip; null (and a test failure) on error.
inline std::shared_ptr<const Engine> MakeEngine(const Plan& plan, int num_threads = 1) {
  absl::StatusOr<std::shared_ptr<const Engine>> engine =
      Engine::Create(RoundTrip(plan), EngineOptions{num_threads});
  EXPECT_TRUE(engine.ok()) << engine.status();
  return engine.ok() ? *engine : nullptr;
}

/// Runs `plan` once on `inputs` with a fresh context; empty (and a test failure) on error.
inline std::vector<Tensor> RunPlan(const Plan& plan, const std::vector<Tensor>& inputs,
                                   int num_threads = 1) {
  std::shared_ptr<const Engine> engine = MakeEngine(plan, num_threads);
  if (engine == nullptr) return {};
  absl::StatusOr<std::vector<Tensor>> out = engine->CreateContext()->Run(inputs);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? std::move(*out) : std::vector<Tensor>{};
}

/// The error Engine::Create gives for `plan` (OK when it succeeds).
inline absl::Status CreateError(const Plan& plan) {
  return Engine::Create(plan, EngineOptions{1}).status();
}

/// Deterministic pseudo-random numbers (a 64-bit LCG).
class TestRandom {
 public:
  explicit TestRandom(uint64_t seed) : state_(seed * 6364136223846793005ull + 1) {}
  uint32_t Next() {
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(state_ >> 33);
  }
  int32_t Int(int32_t lo, int32_t hi) { return lo + static_cast<int32_t>(Next() % (hi - lo + 1)); }
  float Float(float lo, float hi) { return lo + (hi - lo) * (Next() % 100000) / 100000.0f; }

 private:
  uint64_t state_;
};

inline Tensor RandomInt8(Dims dims, uint64_t seed, int32_t lo = -128, int32_t hi = 127) {
  Tensor t(DType::kInt8, std::move(dims));
  TestRandom r(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(r.Int(lo, hi));
  return t;
}

inline Tensor RandomFloat(Dims dims, uint64_t seed, float lo = -2.0f, float hi = 2.0f) {
  Tensor t(DType::kFloat32, std::move(dims));
  TestRandom r(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = r.Float(lo, hi);
  return t;
}

template <typename T>
std::vector<T> RandomVector(size_t n, uint64_t seed, int32_t lo, int32_t hi) {
  std::vector<T> v(n);
  TestRandom r(seed);
  for (T& x : v) x = static_cast<T>(r.Int(lo, hi));
  return v;
}

/// The contract's quantization step written out independently of support/quantize.h:
/// nearbyint (the default rounding mode: half to even) of x, plus zp, clamped to [lo, hi].
inline int8_t RoundClamp(float x, int32_t zp, int32_t lo = -128, int32_t hi = 127) {
  if (std::isnan(x)) x = 0.0f;
  const double r = std::nearbyint(static_cast<double>(std::fmax(-1e7f, std::fmin(1e7f, x))));
  const double q = std::fmin(hi, std::fmax(lo, r + zp));
  return static_cast<int8_t>(q);
}

/// Element-wise equality of two tensors with a readable first mismatch.
inline void ExpectTensorsEqual(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.GetAsDouble(i), w = want.GetAsDouble(i);
    if (!(g == w || (std::isnan(g) && std::isnan(w)))) {
      ADD_FAILURE() << "element " << i << " of " << DimsToString(got.dims()) << ": got " << g
                    << ", want " << w;
      return;
    }
  }
}

/// |got - want| <= tol * (1 + |want|) element-wise.
inline void ExpectTensorsNear(const Tensor& got, const Tensor& want, double tol = 1e-5) {
  ASSERT_EQ(got.dtype(), want.dtype());
  ASSERT_EQ(got.dims(), want.dims());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.GetAsDouble(i), w = want.GetAsDouble(i);
    if (!(std::fabs(g - w) <= tol * (1.0 + std::fabs(w)))) {
      ADD_FAILURE() << "element " << i << " of " << DimsToString(got.dims()) << ": got " << g
                    << ", want " << w;
      return;
    }
  }
}

}  // namespace qcc::runtime::engine_testing

#endif  // QCC_TESTS_RUNTIME_ENGINE_TEST_UTIL_H_
