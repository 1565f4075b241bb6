#include "backend_cpu/lowering.h"

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "passes/fuse_util.h"
#include "runtime/memory_plan.h"
#include "runtime/steps.h"
#include "support/quantize.h"
#include "support/status.h"

namespace qcc::cpu {
namespace {

using ir::OpKind;
using runtime::BufferKind;
using runtime::PlanBuffer;
using runtime::PlanStep;
using runtime::StepKind;

/// Plan dims of a value: the leading symbolic extent becomes -1 (the batch).
absl::StatusOr<std::vector<int64_t>> PlanDims(const ir::Value& v) {
  if (!v.type().has_rank()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", v.name(), "' has no known rank"));
  }
  std::vector<int64_t> dims;
  const auto& d = *v.type().dims;
  for (size_t i = 0; i < d.size(); ++i) {
    if (ir::IsKnown(d[i])) {
      dims.push_back(d[i]);
    } else if (i == 0) {
      dims.push_back(-1);
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", v.name(), "' has a dynamic extent at axis ", i,
                       "; plans support a dynamic batch only: export the model with fixed sizes"));
    }
  }
  return dims;
}

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
int64_t At(const ir::Ints& v, size_t i, int64_t fallback) { return i < v.size() ? v[i] : fallback; }

/// Explicit pads [begin_h, begin_w, end_h, end_w] for `auto_pad` (ONNX: SAME_* gives
/// ceil(in / stride) outputs, the odd pad at the end for SAME_UPPER and at the start for
/// SAME_LOWER; VALID none) on an input of spatial extents `in`.
std::array<int64_t, 4> ResolvePads(ir::AutoPad auto_pad, const ir::Ints& pads,
                                   const std::array<int64_t, 2>& in,
                                   const std::array<int64_t, 2>& kernel,
                                   const std::array<int64_t, 2>& stride,
                                   const std::array<int64_t, 2>& dilation) {
  std::array<int64_t, 4> p = {At(pads, 0, 0), At(pads, 1, 0), At(pads, 2, 0), At(pads, 3, 0)};
  if (auto_pad == ir::AutoPad::kValid) return {0, 0, 0, 0};
  if (auto_pad != ir::AutoPad::kSameUpper && auto_pad != ir::AutoPad::kSameLower) return p;
  for (int a = 0; a < 2; ++a) {
    const int64_t out = (in[a] + stride[a] - 1) / stride[a];
    const int64_t total =
        std::max<int64_t>(0, (out - 1) * stride[a] + (kernel[a] - 1) * dilation[a] + 1 - in[a]);
    const int64_t small = total / 2, large = total - small;
    p[a] = auto_pad == ir::AutoPad::kSameUpper ? small : large;
    p[a + 2] = total - p[a];
  }
  return p;
}

/// Spatial extents (H, W) of a rank-4 value's type (0 when unknown).
std::array<int64_t, 2> Spatial(const ir::Value* v) {
  const auto& d = *v->type().dims;
  return {ir::IsKnown(d[2]) ? d[2] : 0, ir::IsKnown(d[3]) ? d[3] : 0};
}

runtime::ConvGeometry Geometry(const ir::Node& node) {
  const auto& a = node.attrs<ir::ConvAttrs>();
  runtime::ConvGeometry g;
  g.stride_h = At(a.strides, 0, 1);
  g.stride_w = At(a.strides, 1, 1);
  g.dilation_h = At(a.dilations, 0, 1);
  g.dilation_w = At(a.dilations, 1, 1);
  const std::array<int64_t, 4> pads =
      ResolvePads(a.auto_pad, a.pads, Spatial(node.input(0)), Spatial(node.input(1)),
                  {g.stride_h, g.stride_w}, {g.dilation_h, g.dilation_w});
  g.pad_top = pads[0];
  g.pad_left = pads[1];
  g.pad_bottom = pads[2];
  g.pad_right = pads[3];
  g.group = a.group;
  return g;
}

runtime::PoolStepParams Pool(const ir::Node& node) {
  const auto& a = node.attrs<ir::PoolAttrs>();
  runtime::PoolStepParams p;
  p.kernel_h = At(a.kernel_shape, 0, 1);
  p.kernel_w = At(a.kernel_shape, 1, 1);
  p.stride_h = At(a.strides, 0, 1);
  p.stride_w = At(a.strides, 1, 1);
  p.dilation_h = At(a.dilations, 0, 1);
  p.dilation_w = At(a.dilations, 1, 1);
  const std::array<int64_t, 4> pads =
      ResolvePads(a.auto_pad, a.pads, Spatial(node.input(0)), {p.kernel_h, p.kernel_w},
                  {p.stride_h, p.stride_w}, {p.dilation_h, p.dilation_w});
  p.pad_top = pads[0];
  p.pad_left = pads[1];
  p.pad_bottom = pads[2];
  p.pad_right = pads[3];
  p.ceil_mode = a.ceil_mode;
  return p;
}

class Lowering {
 public:
  Lowering(const ir::Graph& graph, const passes::QuantDecision& decision,
           const LowerOptions& options)
      : graph_(graph), d_(decision), options_(options) {}

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
  /// The fp32 buffer of `v` (a weight for constants; a Dequantize when only int8 exists).
  absl::StatusOr<int32_t> F32(const ir::Value* v, const ir::Node& user);
  /// The int8 buffer of `v` (a Quantize when only fp32 exists).
  absl::StatusOr<int32_t> I8(const ir::Value* v, const ir::Node& user);
  /// A new buffer for output `v` of a step: the graph output buffer for fp32 graph outputs.
  absl::StatusOr<int32_t> Output(const ir::Value* v, DType dtype);
  /// Notes an int8 tensor's scale and zero point in the plan's metadata ("quant:<tensor>" ->
  /// "<scale> <zero point>"), so reports can dequantize intermediate buffers.
  void RecordParams(const ir::Value* v) {
    const passes::QuantParams& q = d_.params.at(v);
    plan_.metadata[absl::StrCat("quant:", v->name())] =
        absl::StrFormat("%.9g %d", q.scale, q.zero_point);
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
  absl::Status PlanArena();

  const ir::Graph& graph_;
  const passes::QuantDecision& d_;
  LowerOptions options_;
  runtime::Plan plan_;
  absl::flat_hash_map<const ir::Value*, int32_t> f32_, i8_, f16_;
  absl::flat_hash_map<const ir::Value*, int32_t> graph_outputs_;
  /// fp16 graph outputs: computed in fp32, then cast into these buffers.
  absl::flat_hash_map<const ir::Value*, int32_t> f16_outputs_;
};

absl::StatusOr<int32_t> Lowering::F32(const ir::Value* v, const ir::Node& user) {
  if (auto it = f32_.find(v); it != f32_.end()) return it->second;
  if (std::optional<Tensor> c = passes::fuse::ConstantF32(v)) {
    const int32_t b = Weight(v->name(), options_.fp16 ? CastTensor(*c, DType::kFloat16) : *c);
    f32_[v] = b;
    return b;
  }
  if (auto h = f16_.find(v); h != f16_.end()) {
    QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
    const int32_t out = NewBuffer(DType::kFloat32, dims, BufferKind::kArena, v->name());
    Emit(StepKind::kCast, user, {h->second}, out, WithParams(runtime::NoStepParams{}));
    f32_[v] = out;
    return out;
  }
  auto it = i8_.find(v);
  if (it == i8_.end()) {
    return absl::InternalError(
        absl::StrCat("node '", user.name(), "': input '", v->name(), "' was not lowered"));
  }
  QCC_ASSIGN_OR_RETURN(const int32_t out, Output(v, DType::kFloat32));
  const passes::QuantParams& q = d_.params.at(v);
  Emit(StepKind::kDequantize, user, {it->second}, out,
       WithParams(runtime::QuantizeParams{q.scale, q.zero_point}));
  f32_[v] = out;
  return out;
}

absl::StatusOr<int32_t> Lowering::I8(const ir::Value* v, const ir::Node& user) {
  if (auto it = i8_.find(v); it != i8_.end()) return it->second;
  QCC_ASSIGN_OR_RETURN(const int32_t in, F32(v, user));
  QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
  const int32_t out = NewBuffer(DType::kInt8, dims, BufferKind::kArena, v->name() + ":int8");
  RecordParams(v);
  const passes::QuantParams& q = d_.params.at(v);
  Emit(StepKind::kQuantize, user, {in}, out,
       WithParams(runtime::QuantizeParams{q.scale, q.zero_point}));
  i8_[v] = out;
  return out;
}

absl::StatusOr<int32_t> Lowering::Output(const ir::Value* v, DType dtype) {
  if (dtype == DType::kFloat32) {
    if (auto it = graph_outputs_.find(v); it != graph_outputs_.end()) return it->second;
  }
  if (dtype == DType::kInt8) RecordParams(v);
  QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
  return NewBuffer(dtype, dims, BufferKind::kArena,
                   dtype == DType::kInt8 ? v->name() + ":int8" : v->name());
}

absl::Status Lowering::LowerMovement(const ir::Node& node, bool int8) {
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  // fp16 plans move f16 bytes (a graph output is produced in fp32).
  const bool half = !int8 && options_.fp16 && !graph_outputs_.contains(y);
  const DType dtype = int8 ? DType::kInt8 : half ? DType::kFloat16 : DType::kFloat32;
  QCC_ASSIGN_OR_RETURN(const int32_t in, int8 ? I8(x, node) : half ? F16(x, node) : F32(x, node));
  int32_t out;
  if (half) {
    QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*y));
    out = NewBuffer(DType::kFloat16, dims, BufferKind::kArena, y->name() + ":f16");
  } else {
    QCC_ASSIGN_OR_RETURN(out, Output(y, dtype));
  }
  (int8 ? i8_ : half ? f16_ : f32_)[y] = out;
  const auto& in_dims = *x->type().dims;
  const int64_t rank = static_cast<int64_t>(in_dims.size());
  switch (node.kind()) {
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      Emit(StepKind::kReshape, node, {in}, out, WithParams(runtime::NoStepParams{}));
      return absl::OkStatus();
    case OpKind::kTranspose: {
      runtime::TransposeStepParams p;
      p.perm = node.attrs<ir::TransposeAttrs>().perm;
      if (p.perm.empty()) {
        for (int64_t a = rank - 1; a >= 0; --a) p.perm.push_back(a);
      }
      Emit(StepKind::kTranspose, node, {in}, out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kSlice: {
      runtime::SliceStepParams p;
      p.starts.assign(rank, 0);
      p.steps.assign(rank, 1);
      auto ints = [&](int i) -> std::vector<int64_t> {
        std::vector<int64_t> v;
        if (const Tensor* t = passes::fuse::ConstantData(node.input(i))) {
          for (int64_t k = 0; k < t->numel(); ++k) v.push_back(t->GetAsInt64(k));
        }
        return v;
      };
      const std::vector<int64_t> starts = ints(1);
      std::vector<int64_t> axes = node.input(3) ? ints(3) : std::vector<int64_t>();
      const std::vector<int64_t> steps = node.input(4) ? ints(4) : std::vector<int64_t>();
      for (size_t i = 0; i < starts.size(); ++i) {
        int64_t axis = i < axes.size() ? axes[i] : static_cast<int64_t>(i);
        if (axis < 0) axis += rank;
        const int64_t step = i < steps.size() ? steps[i] : 1;
        if (axis == 0 && !ir::IsKnown(in_dims[0])) {
          return absl::UnimplementedError(
              absl::StrCat("node '", node.name(), "': Slice over the dynamic batch axis"));
        }
        const int64_t dim = in_dims[axis];
        int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
        s = step > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
        p.starts[axis] = s;
        p.steps[axis] = step;
      }
      Emit(StepKind::kSlice, node, {in}, out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kPad: {
      runtime::PadStepParams p;
      const Tensor* pads = passes::fuse::ConstantData(node.input(1));
      if (pads == nullptr || pads->numel() != 2 * rank || node.input(3) != nullptr) {
        return absl::UnimplementedError(
            absl::StrCat("node '", node.name(), "': Pad needs constant pads for every axis"));
      }
      for (int64_t k = 0; k < pads->numel(); ++k) p.pads.push_back(pads->GetAsInt64(k));
      if (node.input(2)) p.value = passes::fuse::ScalarF32(node.input(2)).value_or(0.0f);
      if (int8) p.int_value = d_.params.at(x).zero_point;
      Emit(StepKind::kPad, node, {in}, out, WithParams(p));
      return absl::OkStatus();
    }
    default:
      return absl::InternalError("not a movement op");
  }
}

absl::Status Lowering::LowerInt8(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  switch (node.kind()) {
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kPad:
      return LowerMovement(node, /*int8=*/true);
    default:
      break;
  }
  const passes::QuantParams& qy = d_.params.at(y);
  QCC_ASSIGN_OR_RETURN(const int32_t out, Output(y, DType::kInt8));
  i8_[y] = out;
  switch (node.kind()) {
    case OpKind::kConv: {
      QCC_ASSIGN_OR_RETURN(const int32_t in, I8(x, node));
      const passes::QuantizedWeights& w = d_.weights.at(&node);
      const auto& a = node.attrs<ir::ConvAttrs>();
      runtime::QConvStepParams p;
      p.geometry = Geometry(node);
      p.pad_value = d_.params.at(x).zero_point;
      p.zp_out = qy.zero_point;
      std::tie(p.lo, p.hi) = Clamp(a, qy);
      Emit(StepKind::kQConv, node,
           {in, Weight(node.name() + ":w", w.weights), Weight(node.name() + ":bias", w.bias),
            Weight(node.name() + ":multiplier", w.multiplier)},
           out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kGemm:
    case OpKind::kMatMul: {
      QCC_ASSIGN_OR_RETURN(const int32_t in, I8(x, node));
      const passes::QuantizedWeights& w = d_.weights.at(&node);
      runtime::QGemmStepParams p;
      p.zp_out = qy.zero_point;
      if (node.kind() == OpKind::kGemm)
        std::tie(p.lo, p.hi) = Clamp(node.attrs<ir::GemmAttrs>(), qy);
      Emit(StepKind::kQGemm, node,
           {in, Weight(node.name() + ":w", w.weights), Weight(node.name() + ":bias", w.bias),
            Weight(node.name() + ":multiplier", w.multiplier)},
           out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kAdd: {
      QCC_ASSIGN_OR_RETURN(const int32_t a, I8(node.input(0), node));
      QCC_ASSIGN_OR_RETURN(const int32_t b, I8(node.input(1), node));
      const passes::QuantParams& qa = d_.params.at(node.input(0));
      const passes::QuantParams& qb = d_.params.at(node.input(1));
      runtime::QAddStepParams p;
      p.mult_a = RescaleMultiplier(qa.scale, qy.scale);
      p.mult_b = RescaleMultiplier(qb.scale, qy.scale);
      p.zp_a = qa.zero_point;
      p.zp_b = qb.zero_point;
      p.zp_out = qy.zero_point;
      std::tie(p.lo, p.hi) = Clamp(node.attrs<ir::AddAttrs>(), qy);
      Emit(StepKind::kQAdd, node, {a, b}, out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kMaxPool: {
      QCC_ASSIGN_OR_RETURN(const int32_t in, I8(x, node));
      Emit(StepKind::kQMaxPool, node, {in}, out, WithParams(Pool(node)));
      return absl::OkStatus();
    }
    case OpKind::kAveragePool:
    case OpKind::kGlobalAveragePool: {
      QCC_ASSIGN_OR_RETURN(const int32_t in, I8(x, node));
      const passes::QuantParams& qx = d_.params.at(x);
      runtime::QAveragePoolStepParams p;
      if (node.kind() == OpKind::kAveragePool) {
        p.pool = Pool(node);
        p.count_include_pad = node.attrs<ir::PoolAttrs>().count_include_pad;
      }
      p.multiplier = RescaleMultiplier(qx.scale, qy.scale);
      p.zp_in = qx.zero_point;
      p.zp_out = qy.zero_point;
      Emit(node.kind() == OpKind::kAveragePool ? StepKind::kQAveragePool
                                               : StepKind::kQGlobalAveragePool,
           node, {in}, out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kConcat: {
      runtime::QConcatStepParams p;
      p.axis = node.attrs<ir::AxisAttrs>().axis;
      if (p.axis < 0) p.axis += static_cast<int64_t>(y->type().dims->size());
      p.zp_out = qy.zero_point;
      std::vector<int32_t> ins;
      for (const ir::Value* v : node.inputs()) {
        QCC_ASSIGN_OR_RETURN(const int32_t b, I8(v, node));
        ins.push_back(b);
        const passes::QuantParams& q = d_.params.at(v);
        p.multipliers.push_back(RescaleMultiplier(q.scale, qy.scale));
        p.zp_in.push_back(q.zero_point);
      }
      Emit(StepKind::kQConcat, node, ins, out, WithParams(p));
      return absl::OkStatus();
    }
    default: {
      auto lut = d_.luts.find(&node);
      if (lut == d_.luts.end()) break;
      QCC_ASSIGN_OR_RETURN(const int32_t in, I8(x, node));
      Tensor table = Tensor::FromVector<int8_t>(DType::kInt8, {256}, lut->second);
      Emit(StepKind::kQLut, node, {in, Weight(node.name() + ":lut", table)}, out,
           WithParams(runtime::NoStepParams{}));
      return absl::OkStatus();
    }
  }
  return absl::InternalError(absl::StrCat("node '", node.name(), "': no int8 lowering"));
}

absl::Status Lowering::LowerFloat(const ir::Node& node) {
  if (node.kind() == OpKind::kConstant || node.kind() == OpKind::kObserve) {
    return absl::OkStatus();
  }
  switch (node.kind()) {
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kTranspose:
    case OpKind::kSlice:
    case OpKind::kPad:
      return LowerMovement(node, /*int8=*/false);
    default:
      break;
  }
  const ir::Value* y = node.output(0);
  for (int i = 0; i < node.num_outputs(); ++i) {
    if (i > 0 && !node.output(i)->uses().empty()) {
      return absl::UnimplementedError(
          absl::StrCat("node '", node.name(), "' (", ir::OpName(node.kind()),
                       "): only its first output can be used in a plan"));
    }
  }
  std::vector<int32_t> ins;
  auto input = [&](int i) -> absl::Status {
    if (node.input(i) == nullptr) {
      ins.push_back(-1);
      return absl::OkStatus();
    }
    QCC_ASSIGN_OR_RETURN(const int32_t b, F32(node.input(i), node));
    ins.push_back(b);
    return absl::OkStatus();
  };
  PlanStep step;
  StepKind kind;
  int num_inputs = 1;
  switch (node.kind()) {
    case OpKind::kConv: {
      const auto& a = node.attrs<ir::ConvAttrs>();
      kind = StepKind::kConv;
      step = WithParams(runtime::ConvStepParams{Geometry(node), FloatActivation(a)});
      num_inputs = 3;
      break;
    }
    case OpKind::kGemm: {
      const auto& a = node.attrs<ir::GemmAttrs>();
      kind = StepKind::kGemm;
      step = WithParams(
          runtime::GemmStepParams{a.alpha, a.beta, a.transA, a.transB, FloatActivation(a)});
      num_inputs = 3;
      break;
    }
    case OpKind::kMatMul:
      if (node.input(0)->type().dims->size() != 2 || node.input(1)->type().dims->size() != 2) {
        return absl::UnimplementedError(
            absl::StrCat("node '", node.name(), "': float MatMul of rank > 2 in a plan"));
      }
      kind = StepKind::kGemm;
      step = WithParams(runtime::GemmStepParams{});
      num_inputs = 2;
      break;
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv: {
      runtime::BinaryStepParams p;
      p.op = static_cast<int64_t>(node.kind() == OpKind::kAdd   ? runtime::BinaryOp::kAdd
                                  : node.kind() == OpKind::kSub ? runtime::BinaryOp::kSub
                                  : node.kind() == OpKind::kMul ? runtime::BinaryOp::kMul
                                                                : runtime::BinaryOp::kDiv);
      if (node.kind() == OpKind::kAdd) p.activation = FloatActivation(node.attrs<ir::AddAttrs>());
      kind = StepKind::kBinary;
      step = WithParams(p);
      num_inputs = 2;
      break;
    }
    case OpKind::kRelu:
    case OpKind::kSigmoid:
    case OpKind::kTanh:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kClip:
    case OpKind::kLeakyRelu: {
      runtime::UnaryStepParams p;
      using U = runtime::UnaryOp;
      switch (node.kind()) {
        case OpKind::kRelu:
          p.op = static_cast<int64_t>(U::kRelu);
          break;
        case OpKind::kSigmoid:
          p.op = static_cast<int64_t>(U::kSigmoid);
          break;
        case OpKind::kTanh:
          p.op = static_cast<int64_t>(U::kTanh);
          break;
        case OpKind::kHardSwish:
          p.op = static_cast<int64_t>(U::kHardSwish);
          break;
        case OpKind::kHardSigmoid:
          p.op = static_cast<int64_t>(U::kHardSigmoid);
          p.alpha = node.attrs<ir::HardSigmoidAttrs>().alpha;
          p.beta = node.attrs<ir::HardSigmoidAttrs>().beta;
          break;
        case OpKind::kLeakyRelu:
          p.op = static_cast<int64_t>(U::kLeakyRelu);
          p.alpha = node.attrs<ir::LeakyReluAttrs>().alpha;
          break;
        default: {  // Clip
          p.op = static_cast<int64_t>(U::kClip);
          p.alpha = -std::numeric_limits<float>::max();
          p.beta = std::numeric_limits<float>::max();
          for (int i = 1; i < node.num_inputs(); ++i) {
            if (node.input(i) == nullptr) continue;
            std::optional<float> v = passes::fuse::ScalarF32(node.input(i));
            if (!v) {
              return absl::UnimplementedError(
                  absl::StrCat("node '", node.name(), "': Clip with non-constant bounds"));
            }
            (i == 1 ? p.alpha : p.beta) = *v;
          }
          break;
        }
      }
      kind = StepKind::kUnary;
      step = WithParams(p);
      break;
    }
    case OpKind::kSoftmax: {
      const auto& a = node.attrs<ir::SoftmaxAttrs>();
      const int64_t rank = static_cast<int64_t>(y->type().dims->size());
      const int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
      // Opset < 13 flattens [axis, rank) into one axis: the same as a softmax over `axis`
      // when every later extent is 1 (squeezenet's [N, 1000, 1, 1]).
      bool trailing_ones = true;
      for (int64_t k = axis + 1; k < rank; ++k) trailing_ones &= (*y->type().dims)[k] == 1;
      if (a.coerce_2d && !trailing_ones) {
        return absl::UnimplementedError(absl::StrCat(
            "node '", node.name(), "': opset < 13 Softmax over a non-final axis in a plan"));
      }
      kind = StepKind::kSoftmax;
      step = WithParams(runtime::AxisStepParams{axis});
      break;
    }
    case OpKind::kMaxPool:
      kind = StepKind::kMaxPool;
      step = WithParams(Pool(node));
      break;
    case OpKind::kAveragePool:
      kind = StepKind::kAveragePool;
      step = WithParams(runtime::AveragePoolStepParams{
          Pool(node), node.attrs<ir::PoolAttrs>().count_include_pad});
      break;
    case OpKind::kGlobalAveragePool:
      kind = StepKind::kGlobalAveragePool;
      step = WithParams(runtime::NoStepParams{});
      break;
    case OpKind::kConcat: {
      int64_t axis = node.attrs<ir::AxisAttrs>().axis;
      if (axis < 0) axis += static_cast<int64_t>(y->type().dims->size());
      kind = StepKind::kConcat;
      step = WithParams(runtime::AxisStepParams{axis});
      num_inputs = node.num_inputs();
      break;
    }
    default:
      return absl::UnimplementedError(absl::StrCat(
          "node '", node.name(), "' (", ir::OpName(node.kind()),
          "): this op cannot be put in a plan yet; it needs a runtime step (runtime/steps.def)"));
  }
  for (int i = 0; i < num_inputs; ++i) QCC_RETURN_IF_ERROR(input(i));
  QCC_ASSIGN_OR_RETURN(const int32_t out, Output(y, DType::kFloat32));
  Emit(kind, node, ins, out, std::move(step));
  FinishFloat(y, out, node);
  return absl::OkStatus();
}

absl::Status Lowering::PlanArena() {
  std::vector<int32_t> arena_ids;
  std::vector<runtime::BufferLifetime> lifetimes;
  absl::flat_hash_map<int32_t, size_t> index;
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    if (plan_.buffers[b].kind != BufferKind::kArena) continue;
    index[static_cast<int32_t>(b)] = lifetimes.size();
    arena_ids.push_back(static_cast<int32_t>(b));
    std::optional<uint64_t> bytes = runtime::BufferBytes(plan_.buffers[b], options_.batch_max);
    if (!bytes) return absl::InvalidArgumentError("a buffer's size overflows");
    lifetimes.push_back({*bytes, std::numeric_limits<int32_t>::max(), -1});
  }
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    auto touch = [&](int32_t b) {
      auto it = index.find(b);
      if (it == index.end()) return;
      runtime::BufferLifetime& l = lifetimes[it->second];
      l.first_step = std::min(l.first_step, static_cast<int32_t>(s));
      l.last_step = std::max(l.last_step, static_cast<int32_t>(s));
    };
    for (int32_t b : plan_.steps[s].inputs) touch(b);
    for (int32_t b : plan_.steps[s].outputs) touch(b);
  }
  for (runtime::BufferLifetime& l : lifetimes) {
    if (l.last_step < 0) l.first_step = l.last_step = 0;  // never used
  }
  QCC_ASSIGN_OR_RETURN(runtime::MemoryPlan memory, runtime::PlanMemory(lifetimes));
  for (size_t i = 0; i < arena_ids.size(); ++i) {
    plan_.buffers[arena_ids[i]].arena_offset = static_cast<int64_t>(memory.offsets[i]);
  }
  plan_.arena_bytes = memory.arena_bytes;
  plan_.metadata["arena_no_reuse_bytes"] = absl::StrCat(memory.no_reuse_bytes);
  return absl::OkStatus();
}

absl::StatusOr<runtime::Plan> Lowering::Run() {
  plan_.target = "cpu";
  plan_.batch_min = options_.batch_min;
  plan_.batch_max = options_.batch_max;
  for (const ir::Value* v : graph_.inputs()) {
    QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
    if (v->dtype() != DType::kFloat32 && v->dtype() != DType::kFloat16) {
      return absl::UnimplementedError(absl::StrCat("input '", v->name(), "' is ",
                                                   DTypeName(v->dtype()),
                                                   "; plans take fp32 or fp16 inputs"));
    }
    const int32_t b = NewBuffer(v->dtype(), dims, BufferKind::kInput, v->name());
    plan_.inputs.push_back({v->name(), b});
    if (v->dtype() == DType::kFloat16 && options_.fp16) {
      f16_[v] = b;
    } else if (v->dtype() == DType::kFloat16) {
      // Computed in fp32 (int8 steps quantize from it).
      const int32_t f = NewBuffer(DType::kFloat32, dims, BufferKind::kArena, v->name() + ":f32");
      Emit(StepKind::kCast, "cast " + v->name(), {b}, f, WithParams(runtime::NoStepParams{}));
      f32_[v] = f;
    } else if (options_.fp16) {
      // Rounded to f16 first, as an fp16 plan on the GPU takes it.
      const int32_t h = NewBuffer(DType::kFloat16, dims, BufferKind::kArena, v->name() + ":f16");
      Emit(StepKind::kCast, "cast " + v->name(), {b}, h, WithParams(runtime::NoStepParams{}));
      f16_[v] = h;
    } else {
      f32_[v] = b;
    }
  }
  for (const ir::Value* v : graph_.outputs()) {
    if (graph_outputs_.contains(v) || f16_outputs_.contains(v)) continue;
    QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
    const bool f16 = v->dtype() == DType::kFloat16;
    if ((v->dtype() != DType::kFloat32 && !f16) || v->is_graph_input() ||
        v->constant() != nullptr) {
      return absl::UnimplementedError(absl::StrCat(
          "output '", v->name(), "': plans produce fp32 or fp16 outputs computed by a step"));
    }
    const int32_t b = NewBuffer(v->dtype(), dims, BufferKind::kOutput, v->name());
    (f16 ? f16_outputs_ : graph_outputs_)[v] = b;
    plan_.outputs.push_back({v->name(), b});
  }
  for (const auto& node : graph_.nodes()) {
    QCC_RETURN_IF_ERROR(d_.runs_int8(node.get()) ? LowerInt8(*node) : LowerFloat(*node));
    // A graph output produced in int8 is dequantized into its output buffer right away.
    for (const ir::Value* v : node->outputs()) {
      if (auto f16 = f16_outputs_.find(v); f16 != f16_outputs_.end()) {
        QCC_ASSIGN_OR_RETURN(const int32_t f, F32(v, *node));
        Emit(StepKind::kCast, *node, {f}, f16->second, WithParams(runtime::NoStepParams{}));
        continue;
      }
      auto out = graph_outputs_.find(v);
      if (out == graph_outputs_.end() || f32_.contains(v)) continue;
      if (auto h = f16_.find(v); h != f16_.end()) {
        Emit(StepKind::kCast, *node, {h->second}, out->second, WithParams(runtime::NoStepParams{}));
        f32_[v] = out->second;
        continue;
      }
      const passes::QuantParams& q = d_.params.at(v);
      Emit(StepKind::kDequantize, *node, {i8_.at(v)}, out->second,
           WithParams(runtime::QuantizeParams{q.scale, q.zero_point}));
      f32_[v] = out->second;
    }
  }
  QCC_RETURN_IF_ERROR(PlanArena());
  QCC_RETURN_IF_ERROR(runtime::ValidatePlan(plan_, "lowered plan"));
  return std::move(plan_);
}

}  // namespace

absl::StatusOr<runtime::Plan> LowerToCpuPlan(const ir::Graph& graph,
                                             const passes::QuantDecision& decision,
                                             const LowerOptions& options) {
  if (options.batch_min < 1 || options.batch_max < options.batch_min) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch range ", options.batch_min, ":", options.batch_max, " is empty"));
  }
  return Lowering(graph, decision, options).Run();
}

}  // namespace qcc::cpu
