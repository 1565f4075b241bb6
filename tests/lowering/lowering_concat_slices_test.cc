// Concats computed in place (backend_cpu/lowering.cc ConcatSlices): in a plan whose extents
// before the concat axis are 1 at every batch it runs, an input of a Concat or QConcat that is
// copied unchanged, read by nothing else and starts at a 64-byte multiple is placed in its slice
// of the output, so the step copies nothing for it; the plan gives the bits of the same plan
// with every buffer in its own bytes, on 1 and 2 threads. An input that is rescaled (another
// reader keeps its own int8 parameters), a slice at an unaligned offset, and any concat of a
// plan with a dynamic batch keep their own buffers.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backend_cpu/lowering.h"
#include "gtest/gtest.h"
#include "ir/attrs.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "passes/quantize.h"
#include "passes/realize_int8.h"
#include "runtime/plan.h"
#include "runtime/steps.h"
#include "tests/lowering/lowering_test_util.h"

namespace qcc::testing {
namespace {

using ir::OpKind;
using runtime::StepKind;

struct Fire {
  bool dynamic_batch = false;  // x:[N, ...] and plans for batch 1 to 4
  bool a_read_twice = false;   // the 3x3 branch is a graph output too
  int64_t side = 8;            // H = W (8: an int8 channel is 64 bytes; 5: 25)
};

/// A SqueezeNet fire module: x:[1 or N, 4, side, side] -> a = Relu(Conv 3x3 (4 -> 8, pads 1)),
/// b = Relu(Conv 1x1 (4 -> 8)), y = Concat(b, a) on channels, z = Conv 1x1 (16 -> 4)(y).
std::unique_ptr<ir::Graph> FireModule(const Fire& f) {
  auto g = std::make_unique<ir::Graph>();
  g->set_opset(17);
  const ir::Dim n = f.dynamic_batch ? ir::SymbolDim(g->AddSymbol("N")) : ir::Dim(1);
  ir::Value* x = g->AddInput("x", ir::TensorType(DType::kFloat32, {n, 4, f.side, f.side}));
  auto conv = [&](const std::string& name, ir::Value* in, int64_t k, int64_t c, int64_t r,
                  int seed) {
    ir::Value* w = g->NewConstant(name + "_w", Seeded({k, c, r, r}, 0.5f, seed));
    ir::Value* b = g->NewConstant(name + "_b", Seeded({k}, 0.1f, seed + 1));
    ir::Node* node = g->AddNode(OpKind::kConv, name, {in, w, b}, {name + "_out"});
    ir::ConvAttrs a;
    a.pads = {r / 2, r / 2, r / 2, r / 2};
    node->set_attrs(a);
    return node->output(0);
  };
  ir::Value* a =
      g->AddNode(OpKind::kRelu, "relu_a", {conv("conv_a", x, 8, 4, 3, 1)}, {"a"})->output(0);
  ir::Value* b =
      g->AddNode(OpKind::kRelu, "relu_b", {conv("conv_b", x, 8, 4, 1, 3)}, {"b"})->output(0);
  ir::Node* cat = g->AddNode(OpKind::kConcat, "concat", {b, a}, {"y"});
  cat->mutable_attrs<ir::AxisAttrs>().axis = 1;
  g->AddOutput(conv("conv_z", cat->output(0), 4, 16, 1, 5));
  if (f.a_read_twice) g->AddOutput(a);
  EXPECT_TRUE(ir::Verify(*g).ok());
  EXPECT_TRUE(ir::InferShapes(*g).ok());
  EXPECT_TRUE(passes::RunPipeline(*g, passes::DefaultPipeline()).ok());
  return g;
}

/// The plan of `g`, int8 when `int8` (ranges as calibration would give them: the Concat's is
/// the union of its inputs'), else fp32.
runtime::Plan Lower(const ir::Graph& g, const Fire& f, bool int8) {
  std::map<std::string, passes::TensorRange> ranges;
  if (int8) {
    ranges = {{"x", {-2, 2}}, {"a", {0, 3}}, {"b", {0, 5}}, {"y", {0, 5}}, {"conv_z_out", {-4, 4}}};
  }
  cpu::LowerOptions options;
  options.batch_min = 1;
  options.batch_max = f.dynamic_batch ? 4 : 1;
  return LowerQuantized(g, ranges, options);
}

/// `plan` with every arena buffer in bytes of its own (no reuse, no slices).
runtime::Plan OwnBytes(runtime::Plan plan) {
  uint64_t end = 0;
  for (runtime::PlanBuffer& b : plan.buffers) {
    if (b.kind != runtime::BufferKind::kArena) continue;
    b.arena_offset = static_cast<int64_t>(end);
    end += runtime::AlignToPlan(*runtime::BufferBytes(b, plan.batch_max));
  }
  plan.arena_bytes = end;
  return plan;
}

/// For the plan's one concat step (kind `kind`): whether each input is in its slice of the
/// output (its arena offset is the output's plus the bytes of the inputs before it).
std::vector<bool> InSlice(const runtime::Plan& plan, StepKind kind) {
  std::vector<bool> in_slice;
  for (const runtime::PlanStep& step : plan.steps) {
    if (step.kind != static_cast<uint32_t>(kind)) continue;
    const runtime::PlanBuffer& y = plan.buffers[step.outputs[0]];
    int64_t offset = y.arena_offset;
    for (int32_t i : step.inputs) {
      const runtime::PlanBuffer& x = plan.buffers[i];
      in_slice.push_back(x.kind == runtime::BufferKind::kArena && x.arena_offset == offset);
      offset += static_cast<int64_t>(*runtime::BufferBytes(x, plan.batch_max));
    }
  }
  return in_slice;
}

void ExpectOwnBytesBits(const runtime::Plan& plan, const Fire& f) {
  const auto input_at = [&f](int64_t batch) {
    return Seeded({batch, 4, f.side, f.side}, 2.0f, static_cast<int>(batch));
  };
  ExpectSamePlanOutputs(plan, OwnBytes(plan), {1}, input_at);
  if (f.dynamic_batch) ExpectSamePlanOutputs(plan, OwnBytes(plan), {4}, input_at);
}

/// The int8 and the fp32 plan of FireModule(f): the concat inputs in their slice are `want`,
/// and the plan gives the bits of OwnBytes(plan).
void ExpectInSliceInt8AndFp32(const Fire& f, const std::vector<bool>& want) {
  std::unique_ptr<ir::Graph> g = FireModule(f);
  for (const bool int8 : {true, false}) {
    SCOPED_TRACE(int8 ? "int8" : "fp32");
    const runtime::Plan plan = Lower(*g, f, int8);
    EXPECT_EQ(InSlice(plan, int8 ? StepKind::kQConcat : StepKind::kConcat), want);
    ExpectOwnBytesBits(plan, f);
  }
}

TEST(LoweringConcatSlicesTest, Int8BranchesAreComputedInTheirSlices) {
  const Fire f;
  std::unique_ptr<ir::Graph> g = FireModule(f);
  const runtime::Plan plan = Lower(*g, f, /*int8=*/true);
  ASSERT_EQ(CountSteps(plan, StepKind::kQConcat), 1);
  EXPECT_EQ(InSlice(plan, StepKind::kQConcat), (std::vector<bool>{true, true}));
  // The slices cost no arena of their own: less than every buffer apart.
  EXPECT_LT(plan.arena_bytes, OwnBytes(plan).arena_bytes);
  ExpectOwnBytesBits(plan, f);
}

TEST(LoweringConcatSlicesTest, Fp32BranchesAreComputedInTheirSlices) {
  const Fire f;
  std::unique_ptr<ir::Graph> g = FireModule(f);
  const runtime::Plan plan = Lower(*g, f, /*int8=*/false);
  ASSERT_EQ(CountSteps(plan, StepKind::kConcat), 1);
  EXPECT_EQ(InSlice(plan, StepKind::kConcat), (std::vector<bool>{true, true}));
  ExpectOwnBytesBits(plan, f);
}

TEST(LoweringConcatSlicesTest, ARescaledInputKeepsItsOwnBuffer) {
  // a is an output too, so it keeps its own range [0, 3] and the QConcat rescales it to y's;
  // b (y's range) is copied unchanged and is still computed in its slice.
  Fire f;
  f.a_read_twice = true;
  std::unique_ptr<ir::Graph> g = FireModule(f);
  const runtime::Plan plan = Lower(*g, f, /*int8=*/true);
  EXPECT_EQ(InSlice(plan, StepKind::kQConcat), (std::vector<bool>{true, false}));
  ExpectOwnBytesBits(plan, f);
}

TEST(LoweringConcatSlicesTest, ASliceAtAnUnalignedOffsetKeepsItsOwnBuffer) {
  // 5 x 5 maps: b is 8 x 25 = 200 int8 bytes, so a's slice would start at 200, no multiple of
  // 64; b's starts at 0. In fp32 (800 bytes) it would start at 800, no multiple either.
  Fire f;
  f.side = 5;
  ExpectInSliceInt8AndFp32(f, {true, false});
}

TEST(LoweringConcatSlicesTest, ADynamicBatchKeepsEveryBuffer) {
  // At batch 4 the slices of the output are not contiguous (and the arena offsets are fixed).
  Fire f;
  f.dynamic_batch = true;
  ExpectInSliceInt8AndFp32(f, {false, false});
}

}  // namespace
}  // namespace qcc::testing
