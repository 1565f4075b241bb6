// The lowering's internals, shared by backend_cpu/lowering.cc (buffers, int8 steps, the arena)
// and backend_cpu/lowering_float.cc (fp32 and data-movement steps). Not a public header.
#ifndef QCC_BACKEND_CPU_LOWERING_INTERNAL_H_
#define QCC_BACKEND_CPU_LOWERING_INTERNAL_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backend_cpu/lowering.h"
#include "ir/symbolic_values.h"
#include "passes/realize_int8.h"
#include "runtime/steps.h"
#include "support/quantize.h"
#include "support/status.h"

namespace qcc::cpu::lowering_internal {

using ir::OpKind;
using runtime::BufferKind;
using runtime::PlanBuffer;
using runtime::PlanStep;
using runtime::StepKind;

/// Plan dims of a value: the leading symbolic extent becomes -1 (the batch).
absl::StatusOr<std::vector<int64_t>> PlanDims(const ir::Value& v);

/// The int8 clamp of a fused activation on an output with parameters `out`.
template <typename Attrs>
std::pair<int64_t, int64_t> Clamp(const Attrs& a, const passes::QuantParams& out) {
  int32_t lo = kInt8Min, hi = kInt8Max;
  if (a.activation == ir::Activation::kRelu) {
    lo = Saturate(0.0f, out.zero_point, kInt8Min, kInt8Max);
  } else if (a.activation == ir::Activation::kClip) {
    lo = Saturate(a.activation_min / out.scale, out.zero_point, kInt8Min, kInt8Max);
    hi = Saturate(a.activation_max / out.scale, out.zero_point, kInt8Min, kInt8Max);
  }
  return {lo, hi};
}

template <typename Attrs>
runtime::StepActivation FloatActivation(const Attrs& a) {
  runtime::StepActivation act;
  if (a.activation == ir::Activation::kRelu) {
    act.lo = 0.0f;
  } else if (a.activation == ir::Activation::kClip) {
    act.lo = std::max(a.activation_min, act.lo);
    act.hi = std::min(a.activation_max, act.hi);
  } else if (a.activation == ir::Activation::kLeakyRelu) {
    act.negative_slope = a.activation_alpha;
  }
  return act;
}

/// An attribute list of 2 spatial values, or `fallback` when empty.
inline int64_t At(const ir::Ints& v, size_t i, int64_t fallback) {
  return i < v.size() ? v[i] : fallback;
}

/// A Conv's geometry, with auto_pad resolved from the static spatial extents.
runtime::ConvGeometry Geometry(const ir::Node& node);
/// A 2-D ConvTranspose's parameters, pads resolved (auto_pad, output_shape) as the shape function
/// and the evaluator resolve them; Unimplemented for other ranks or unknown spatial extents.
absl::StatusOr<runtime::ConvTransposeStepParams> ConvTransposeParams(const ir::Node& node);
/// A MaxPool/AveragePool window, with auto_pad resolved.
runtime::PoolStepParams Pool(const ir::Node& node);

class Lowering {
 public:
  Lowering(const ir::Graph& graph, const LowerOptions& options)
      : graph_(graph), options_(options) {}

  absl::StatusOr<runtime::Plan> Run();

 private:
  int32_t NewBuffer(DType dtype, std::vector<int64_t> dims, BufferKind kind, std::string name) {
    PlanBuffer b;
    b.dtype = dtype;
    b.dims = std::move(dims);
    b.kind = kind;
    b.name = std::move(name);
    plan_.buffers.push_back(std::move(b));
    return static_cast<int32_t>(plan_.buffers.size() - 1);
  }
  int32_t Weight(const std::string& name, const Tensor& t) {
    const int32_t w = plan_.AddWeight(name, t.dtype(), t.dims(), t.raw(), t.nbytes());
    const int32_t b = NewBuffer(t.dtype(), t.dims(), BufferKind::kWeight, name);
    plan_.buffers[b].weight = w;
    return b;
  }
  void Emit(StepKind kind, const ir::Node& node, std::vector<int32_t> inputs, int32_t output,
            PlanStep step = {}) {
    Emit(kind, node.name(), std::move(inputs), output, std::move(step));
  }
  void Emit(StepKind kind, const std::string& name, std::vector<int32_t> inputs, int32_t output,
            PlanStep step = {}) {
    step.kind = static_cast<uint32_t>(kind);
    step.name = name;
    step.inputs = std::move(inputs);
    step.outputs = {output};
    plan_.steps.push_back(std::move(step));
  }
  template <typename P>
  PlanStep WithParams(const P& params) {
    PlanStep s;
    runtime::EncodeParams(params, &s);
    return s;
  }
  /// The fp32 buffer of `v` (a weight for constants; the step of the qcc.Dequantize that gives
  /// `v`, named after `user`, when `user` is the first step to read it).
  absl::StatusOr<int32_t> F32(const ir::Value* v, const ir::Node& user);
  /// The buffer of the int8 value `v` (the step of the qcc.Quantize that gives `v`, named after
  /// `user`, when `user` is the first step to read it).
  absl::StatusOr<int32_t> I8(const ir::Value* v, const ir::Node& user);
  /// A Dequantize step named `name` from buffer `in` of the int8 value `q` to buffer `out`.
  void EmitDequantize(const std::string& name, const ir::Value* q, int32_t in, int32_t out);
  /// Whether `node` of the quantized graph (passes/realize_int8.h) is an int8 step: QConv, QGemm
  /// and QLut, and the ops whose output is an int8 tensor (Add, pools, Concat, data movement).
  static bool RunsInt8(const ir::Node& node) {
    return node.kind() == OpKind::kQConv || node.kind() == OpKind::kQGemm ||
           node.kind() == OpKind::kQLut ||
           (node.num_outputs() > 0 && node.output(0)->quant() != nullptr);
  }
  /// The buffer of an integer (i64, i32, bool) tensor: a plan input, a weight for constants, or
  /// what a movement step wrote.
  absl::StatusOr<int32_t> Int(const ir::Value* v, const ir::Node& user);
  /// A new buffer for output `v` of a step: the graph output buffer for fp32 graph outputs.
  absl::StatusOr<int32_t> Output(const ir::Value* v, DType dtype);
  /// Notes the int8 value `v`'s scale and zero point in the plan's metadata ("quant:<tensor>"
  /// -> "<scale> <zero point>", the fused graph's tensor name), so reports can dequantize
  /// intermediate buffers; and, for a tensor quantized only where its consumers are not
  /// constant, that interval ("saturates:<tensor>" -> "<lo> <hi>", either may be inf), which
  /// reports clamp the fp32 reference to.
  void RecordParams(const ir::Value* v) {
    if (v->quant() == nullptr) return;  // the verifier's rules rule it out
    const std::string tensor = passes::FloatTensorName(*v);
    plan_.metadata[absl::StrCat("quant:", tensor)] =
        absl::StrFormat("%.9g %d", v->quant()->scale, v->quant()->zero_point);
    if (const std::pair<float, float>* s = v->saturation()) {
      plan_.metadata[absl::StrCat("saturates:", tensor)] =
          absl::StrFormat("%.9g %.9g", s->first, s->second);
    }
  }
  /// The f16 buffer of `v` (fp16 plans): a Cast of its fp32 buffer when there is none yet.
  absl::StatusOr<int32_t> F16(const ir::Value* v, const ir::Node& user) {
    if (auto it = f16_.find(v); it != f16_.end()) return it->second;
    QCC_ASSIGN_OR_RETURN(const int32_t f, F32(v, user));
    QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
    const int32_t h = NewBuffer(DType::kFloat16, dims, BufferKind::kArena, v->name() + ":f16");
    Emit(StepKind::kCast, user, {f}, h, WithParams(runtime::NoStepParams{}));
    f16_[v] = h;
    return h;
  }
  /// Records `out` (fp32, just written by a step) as `y`'s value; an fp16 plan rounds it to f16
  /// (a Cast) and keeps only the rounded copy, except for graph outputs.
  void FinishFloat(const ir::Value* y, int32_t out, const ir::Node& node) {
    if (!options_.fp16 || graph_outputs_.contains(y)) {
      f32_[y] = out;
      return;
    }
    const PlanBuffer& b = plan_.buffers[out];
    const int32_t h = NewBuffer(DType::kFloat16, b.dims, BufferKind::kArena, y->name() + ":f16");
    Emit(StepKind::kCast, node, {out}, h, WithParams(runtime::NoStepParams{}));
    f16_[y] = h;
  }
  absl::Status LowerInt8(const ir::Node& node);
  absl::Status LowerFloat(const ir::Node& node);
  absl::Status LowerMovement(const ir::Node& node, bool int8);
  /// Gather, Cast, MatMul of rank > 2, ReduceMean/ReduceSum, LayerNormalization, qcc.Attention:
  /// the steps a transformer needs (lowering_float.cc); false in `handled` when `node` is none
  /// of them.
  absl::Status LowerSequenceOp(const ir::Node& node, bool& handled);
  absl::Status PlanArena();
  /// LowerOptions::fuse_steps, on pairs of steps whose intermediate buffer has no other reader
  /// and is no graph output: Unary -> Quantize becomes one UnaryQuantize step; an fp32 Conv
  /// without an activation -> Add (any activation) of a tensor of its output's dims becomes the
  /// Conv with that tensor as its residual input and the Add's activation; an fp32-result
  /// QGemm or DynamicQGemm -> Add (no activation) of a tensor of its output's dims becomes the
  /// GEMM with that tensor as its residual input; QConv -> QAdd of a tensor of its output's
  /// dims becomes one QConvAdd step; DynamicQGemm steps of one X without a residual become one
  /// DynamicQGemms step. Each gives the bits of the steps it replaces.
  void FuseSteps();

  // Shape arithmetic (lowering_shape.cc). Exporters compute shapes from Shape(x); with a dynamic
  // batch N such values are affine in N (ir/symbolic_values.h). Nodes whose outputs are all
  // known that way need no step; a step that reads one as data gets a BatchAffine step.
  /// The BatchAffine parameters of `v` when its value is known as offset + coef * batch.
  std::optional<runtime::BatchAffineStepParams> BatchAffineOf(const ir::Value* v) const;
  /// True when every output of `node` is known that way (and it has outputs).
  bool KnownAtCompileTime(const ir::Node& node) const;
  /// Emits the BatchAffine step writing `v` into buffer `out`.
  void EmitBatchAffine(const ir::Value* v, int32_t out, const ir::Node& user);
  /// OK when every tensor a step will produce has plan dims (static but for the batch);
  /// otherwise an error naming the first node that makes an extent unknown and what it comes
  /// from (a data-dependent value, an extent the flags can fix).
  absl::Status CheckExtentsKnown() const;
  /// The Resize step parameters of a Resize node whose scales or sizes are known.
  absl::StatusOr<runtime::ResizeStepParams> ResizeParams(const ir::Node& node) const;

  const ir::Graph& graph_;
  LowerOptions options_;
  ir::SymbolicValues symbolic_;
  /// The graph inputs' leading symbolic extent (the plan's batch), or kUnknownDim.
  ir::Dim batch_symbol_ = ir::kUnknownDim;
  runtime::Plan plan_;
  absl::flat_hash_map<const ir::Value*, int32_t> f32_, i8_, f16_;
  /// Integer tensors (token ids, masks): moved and gathered as they are, cast to f32 for math.
  absl::flat_hash_map<const ir::Value*, int32_t> int_;
  absl::flat_hash_map<const ir::Value*, int32_t> graph_outputs_;
  /// fp16 graph outputs: computed in fp32, then cast into these buffers.
  absl::flat_hash_map<const ir::Value*, int32_t> f16_outputs_;
};

}  // namespace qcc::cpu::lowering_internal

#endif  // QCC_BACKEND_CPU_LOWERING_INTERNAL_H_
