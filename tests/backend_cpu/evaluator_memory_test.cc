// The evaluator holds only the tensors that are still live: a dead intermediate is freed before
// the next node runs, and from the second run on the same shapes the intermediates share one
// arena the size of the live peak. The graph: x[1024] -> eight Pads, each 1024 zeros longer
// (4 KiB more: sizes 8, 12, ..., 36 KiB, all different) -> ReduceSum to one float. Its live peak
// is the last two Pads, 32 + 36 = 68 KiB; a cache of every freed size would hold 176 KiB.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend_cpu/evaluator.h"
#include "ir/shape_inference.h"
#include "tests/testing/op_test_util.h"

namespace qcc::testing {
namespace {

constexpr int64_t kN = 1024;
constexpr int kPads = 8;
constexpr int64_t kKiB = 1024;
constexpr int64_t kLivePeak = (32 + 36) * kKiB;  // y7 + y8
constexpr int64_t kOutputBytes = 64;             // one float, rounded up to 64

/// x -> y1 = Pad(x, +kN zeros) -> ... -> y8 -> sum = ReduceSum(y8) (the only output); x has
/// kN elements, or any number with `symbolic`.
void BuildPadChain(ir::Graph& g, bool symbolic = false) {
  g.set_opset(21);
  const ir::Dim n = symbolic ? ir::SymbolDim(g.AddSymbol("n")) : kN;
  ir::Value* y = g.AddInput("x", ir::TensorType(DType::kFloat32, std::vector<ir::Dim>{n}));
  ir::Value* pads = g.NewConstant("pads", I64({2}, {0, kN}));
  for (int i = 1; i <= kPads; ++i) {
    const std::string name = "y" + std::to_string(i);
    y = g.AddNode(ir::OpKind::kPad, name, {y, pads}, {name})->output(0);
  }
  g.AddOutput(g.AddNode(ir::OpKind::kReduceSum, "sum", {y}, {"sum"})->output(0));
  ASSERT_TRUE(ir::InferShapes(g).ok());
}

Tensor Ramp(int64_t n = kN) {
  Tensor t(DType::kFloat32, {n});
  for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(i % 7) - 3.0f;
  return t;
}

float Sum(const Tensor& t) {
  float s = 0.0f;
  for (int64_t i = 0; i < t.numel(); ++i) s += t.data<float>()[i];
  return s;
}

/// y_i is x followed by i * kN zeros.
void ExpectPadded(const Tensor& y, int i, const Tensor& x) {
  ASSERT_EQ(y.numel(), (i + 1) * kN);
  for (int64_t j = 0; j < y.numel(); ++j) {
    ASSERT_EQ(y.data<float>()[j], j < kN ? x.data<float>()[j] : 0.0f)
        << "y" << i << "[" << j << "]";
  }
}

TEST(EvaluatorMemoryTest, DeadIntermediatesAreFreedBeforeTheNextNodeRuns) {
  ir::Graph g;
  BuildPadChain(g);
  // When y_i is computed, y_{i-1} is its input and every y_j with j < i - 1 is dead: nothing
  // may hold their storage any more (a pool keeping freed buffers would).
  std::map<int, std::weak_ptr<uint8_t>> storage;
  std::vector<std::string> held;
  cpu::EvalOptions options;
  options.on_value = [&](const ir::Value& v, const Tensor& t) {
    if (v.name()[0] != 'y') return;
    const int i = std::stoi(v.name().substr(1));
    storage[i] = t.storage();
    for (int j = 1; j < i - 1; ++j) {
      if (!storage[j].expired()) held.push_back("y" + std::to_string(j) + " at " + v.name());
    }
  };
  auto ev = cpu::Evaluator::Create(g, options);
  ASSERT_TRUE(ev.ok()) << ev.status();
  const Tensor x = Ramp();
  for (int run = 0; run < 3; ++run) {  // a first run, then runs over the arena
    auto out = (*ev)->Run({x});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].data<float>()[0], Sum(x));
    EXPECT_TRUE(held.empty()) << "run " << run << ": still held: " << held.front();
    held.clear();
    storage.clear();
  }
}

TEST(EvaluatorMemoryTest, PeakIsTheLivePeakAndLaterRunsShareOneArena) {
  ir::Graph g;
  BuildPadChain(g);
  auto ev = cpu::Evaluator::Create(g);
  ASSERT_TRUE(ev.ok()) << ev.status();
  const Tensor x = Ramp();

  auto out = (*ev)->Run({x});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].data<float>()[0], Sum(x));
  cpu::EvalMemoryStats first = (*ev)->last_run_memory();
  EXPECT_EQ(first.peak_bytes, kLivePeak);  // freed one by one, never cached
  EXPECT_EQ(first.arena_bytes, 0);
  EXPECT_EQ(first.separate_allocations, kPads + 1);

  for (int run = 1; run < 4; ++run) {
    out = (*ev)->Run({x});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].data<float>()[0], Sum(x));
    cpu::EvalMemoryStats later = (*ev)->last_run_memory();
    EXPECT_EQ(later.arena_bytes, kLivePeak) << "run " << run;  // greedy by size is exact here
    EXPECT_EQ(later.peak_bytes, kLivePeak + kOutputBytes) << "run " << run;
    EXPECT_EQ(later.separate_allocations, 1) << "run " << run;  // the output, which escapes
  }
}

TEST(EvaluatorMemoryTest, TensorsKeptByTheCallerAreNeverOverwritten) {
  // Runs on the arena while on_value keeps every Pad output alive: the tensors planned over
  // their bytes must go elsewhere. Once the caller stops keeping them, the arena comes back.
  ir::Graph g;
  BuildPadChain(g);
  bool keep = false;
  std::map<int, Tensor> kept;
  cpu::EvalOptions options;
  options.on_value = [&](const ir::Value& v, const Tensor& t) {
    if (keep && v.name()[0] == 'y') kept[std::stoi(v.name().substr(1))] = t;
  };
  auto ev = cpu::Evaluator::Create(g, options);
  ASSERT_TRUE(ev.ok()) << ev.status();
  const Tensor x = Ramp();
  for (int run = 0; run < 7; ++run) {
    keep = run == 2 || run == 3;  // run 0 records, run 1 plans the arena
    auto out = (*ev)->Run({x});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].data<float>()[0], Sum(x)) << "run " << run;
    const cpu::EvalMemoryStats stats = (*ev)->last_run_memory();
    if (run == 2) {
      EXPECT_EQ(stats.arena_bytes, kLivePeak);
      EXPECT_GT(stats.separate_allocations, 1);  // went around the kept tensors
    }
    if (keep) {
      ASSERT_EQ(kept.size(), static_cast<size_t>(kPads));
      for (const auto& [i, y] : kept) ExpectPadded(y, i, x);
    }
    if (run >= 5) {  // run 4 recorded without the keeping
      EXPECT_EQ(stats.arena_bytes, kLivePeak) << "run " << run;
      EXPECT_EQ(stats.separate_allocations, 1) << "run " << run;
    }
    kept.clear();
  }
}

TEST(EvaluatorMemoryTest, NewInputShapesRecordAgain) {
  // The arena is planned for one set of input shapes: another shape runs without it (and
  // records), and the arena follows the latest shapes.
  ir::Graph g;
  BuildPadChain(g, /*symbolic=*/true);
  auto ev = cpu::Evaluator::Create(g);
  ASSERT_TRUE(ev.ok()) << ev.status();
  // With x of n elements the live peak is the last two Pads: (n + 7 kN) + (n + 8 kN) floats.
  int64_t previous = 0;
  for (int64_t n : {kN, kN, 2 * kN, 2 * kN, 2 * kN, kN, kN}) {
    const Tensor x = Ramp(n);
    auto out = (*ev)->Run({x});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].data<float>()[0], Sum(x));
    const int64_t live_peak = 4 * (2 * n + 15 * kN);
    const cpu::EvalMemoryStats stats = (*ev)->last_run_memory();
    EXPECT_EQ(stats.arena_bytes, n == previous ? live_peak : 0) << n;
    EXPECT_EQ(stats.peak_bytes, n == previous ? live_peak + kOutputBytes : live_peak) << n;
    previous = n;
  }
}

TEST(EvaluatorMemoryTest, AnOutputPastTheMemoryLimitIsAnErrorNamingTheNode) {
  // y7 and y8 are live together at 68 KiB: a 64 KiB limit stops at y8, before allocating it.
  ir::Graph g;
  BuildPadChain(g);
  cpu::EvalOptions options;
  options.max_memory = 64 * kKiB;
  auto evaluator = cpu::Evaluator::Create(g, options);
  ASSERT_TRUE(evaluator.ok()) << evaluator.status();
  absl::StatusOr<std::vector<Tensor>> out = (*evaluator)->Run({Ramp()});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(out.status().message().find("node 'y8' (Pad): output 0 f32[9216] needs 36.0 KiB"),
            std::string::npos)
      << out.status();
  EXPECT_NE(out.status().message().find("memory limit of 64.0 KiB"), std::string::npos)
      << out.status();
  // With the live peak allowed, the same graph runs.
  options.max_memory = kLivePeak;
  evaluator = cpu::Evaluator::Create(g, options);
  ASSERT_TRUE(evaluator.ok());
  ASSERT_TRUE((*evaluator)->Run({Ramp()}).ok());
}

}  // namespace
}  // namespace qcc::testing
