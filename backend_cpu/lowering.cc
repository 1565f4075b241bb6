#include "backend_cpu/lowering.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "backend_cpu/lowering_internal.h"
#include "ir/shape_fns/nn_window.h"
#include "passes/fuse_util.h"

namespace qcc::cpu {
namespace lowering_internal {

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
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor '", v.name(), "' has a dynamic extent at axis ", i,
          "; plans support a dynamic batch only: fix the other extents with qcc compile --shape "
          "NAME=N,D1,... (e.g. x=N,3,48,192)"));
    }
  }
  return dims;
}

namespace {

/// The dtypes a plan's input may have.
bool IsPlanDType(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat16 || t == DType::kInt64 || t == DType::kInt32 ||
         t == DType::kBool;
}

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

}  // namespace

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

absl::StatusOr<runtime::ConvTransposeStepParams> ConvTransposeParams(const ir::Node& node) {
  const auto& a = node.attrs<ir::ConvTransposeAttrs>();
  const ir::Value* x = node.input(0);
  const ir::Value* w = node.input(1);
  const std::string where = absl::StrCat("node '", node.name(), "' (ConvTranspose): ");
  if (x->type().dims->size() != 4 || w->type().dims->size() != 4) {
    return absl::UnimplementedError(where + "only 2-D transposed convolutions go in a plan");
  }
  const std::array<int64_t, 2> in = Spatial(x), kernel = Spatial(w);
  if (in[0] < 1 || in[1] < 1 || kernel[0] < 1 || kernel[1] < 1) {
    return absl::UnimplementedError(where +
                                    "the input's and the weight's spatial extents must "
                                    "be known at compile time");
  }
  auto spec = ir::MakeWindowSpec(
      2, a.kernel_shape.empty() ? ir::Ints{kernel[0], kernel[1]} : a.kernel_shape, a.strides,
      a.dilations, a.pads, a.auto_pad, false);
  if (!spec.ok()) return absl::InvalidArgumentError(where + std::string(spec.status().message()));
  runtime::ConvTransposeStepParams p;
  runtime::ConvGeometry& g = p.geometry;
  g.stride_h = spec->strides[0];
  g.stride_w = spec->strides[1];
  g.dilation_h = spec->dilations[0];
  g.dilation_w = spec->dilations[1];
  g.group = a.group;
  p.output_padding_h = At(a.output_padding, 0, 0);
  p.output_padding_w = At(a.output_padding, 1, 0);
  const int64_t n_shape = static_cast<int64_t>(a.output_shape.size());
  for (int64_t i = 0; i < 2; ++i) {
    const int64_t requested = n_shape == 0 ? -1 : a.output_shape[n_shape - 2 + i];
    auto ax = ir::TransposedWindowAxis(*spec, i, in[i],
                                       i == 0 ? p.output_padding_h : p.output_padding_w, requested);
    if (!ax.ok()) return absl::InvalidArgumentError(where + std::string(ax.status().message()));
    (i == 0 ? g.pad_top : g.pad_left) = ax->pad_begin;
    (i == 0 ? g.pad_bottom : g.pad_right) = ax->pad_end;
  }
  return p;
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

absl::StatusOr<int32_t> Lowering::Int(const ir::Value* v, const ir::Node& user) {
  if (auto it = int_.find(v); it != int_.end()) return it->second;
  if (const Tensor* c = passes::fuse::ConstantData(v); c != nullptr && !IsFloat(c->dtype())) {
    const int32_t b = Weight(v->name(), *c);
    int_[v] = b;
    return b;
  }
  return absl::UnimplementedError(absl::StrCat(
      "node '", user.name(), "': input '", v->name(), "' is a ", DTypeName(v->dtype()),
      " tensor computed at run time; plans compute integer tensors only by moving them "
      "(Reshape, Unsqueeze, ...) from an input"));
}

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
  if (IsFloat(v->dtype()) && BatchAffineOf(v)) {
    // Shape arithmetic read as data (a float computed from the batch): known at compile time.
    QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
    const int32_t out = NewBuffer(DType::kFloat32, dims, BufferKind::kArena, v->name());
    EmitBatchAffine(v, out, user);
    f32_[v] = out;
    return out;
  }
  // The Dequantize of an int8 tensor, where the first float step reads it.
  const ir::Node* dq = v->producer();
  if (dq == nullptr || dq->kind() != OpKind::kDequantize) {
    return absl::InternalError(
        absl::StrCat("node '", user.name(), "': input '", v->name(), "' was not lowered"));
  }
  const ir::Value* q = dq->input(0);
  QCC_ASSIGN_OR_RETURN(const int32_t in, I8(q, user));
  QCC_ASSIGN_OR_RETURN(const int32_t out, Output(v, DType::kFloat32));
  EmitDequantize(user.name(), q, in, out);
  f32_[v] = out;
  return out;
}

absl::StatusOr<int32_t> Lowering::I8(const ir::Value* v, const ir::Node& user) {
  if (auto it = i8_.find(v); it != i8_.end()) return it->second;
  // The Quantize of a float tensor, where the first int8 step reads it.
  const ir::Node* q = v->producer();
  if (q == nullptr || q->kind() != OpKind::kQuantize || v->quant() == nullptr) {
    return absl::InternalError(
        absl::StrCat("node '", user.name(), "': int8 input '", v->name(), "' was not lowered"));
  }
  QCC_ASSIGN_OR_RETURN(const int32_t in, F32(q->input(0), user));
  QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
  const int32_t out = NewBuffer(DType::kInt8, dims, BufferKind::kArena, v->name());
  RecordParams(v);
  Emit(StepKind::kQuantize, user, {in}, out,
       WithParams(runtime::QuantizeParams{v->quant()->scale, v->quant()->zero_point}));
  i8_[v] = out;
  return out;
}

void Lowering::EmitDequantize(const std::string& name, const ir::Value* q, int32_t in,
                              int32_t out) {
  Emit(StepKind::kDequantize, name, {in}, out,
       WithParams(runtime::QuantizeParams{q->quant()->scale, q->quant()->zero_point}));
}

absl::StatusOr<int32_t> Lowering::Output(const ir::Value* v, DType dtype) {
  if (dtype == DType::kFloat32) {
    if (auto it = graph_outputs_.find(v); it != graph_outputs_.end()) return it->second;
  }
  if (dtype == DType::kInt8) RecordParams(v);
  QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
  return NewBuffer(dtype, dims, BufferKind::kArena, v->name());
}

absl::Status Lowering::LowerInt8(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  // Resize only when nearest: passes/quantize.cc lets no other mode be int8.
  if (ir::Int8FormOf(node.kind()) == ir::Int8Form::kMovement) {
    return LowerMovement(node, /*int8=*/true);
  }
  if ((node.kind() == OpKind::kQConv || node.kind() == OpKind::kQGemm) && node.num_inputs() < 4) {
    return absl::InternalError(absl::StrCat(
        "node '", node.name(),
        "' is in scale form (no int32 bias and multipliers): run the fold-scales pass first "
        "(passes::RealizeInt8 does)"));
  }
  // The int8 weights, bias and multipliers of a QConv or QGemm (constants of the quantized
  // graph), named after the node as plan weights.
  auto weights =
      [&](std::initializer_list<const char*> suffixes) -> absl::StatusOr<std::vector<int32_t>> {
    std::vector<int32_t> ins;
    int i = 1;
    for (const char* suffix : suffixes) {
      const ir::Value* c = node.input(i++);
      if (c == nullptr) break;
      if (c->constant() == nullptr) {
        return absl::InternalError(
            absl::StrCat("node '", node.name(), "': input '", c->name(), "' is not a constant"));
      }
      ins.push_back(Weight(node.name() + suffix, *c->constant()));
    }
    return ins;
  };
  if (node.kind() == OpKind::kQGemm && node.attrs<ir::QGemmAttrs>().float_result) {
    // The fp32 result (with the bias Add folded in when there was one).
    QCC_ASSIGN_OR_RETURN(const int32_t in, I8(x, node));
    QCC_ASSIGN_OR_RETURN(const int32_t out, Output(y, DType::kFloat32));
    QCC_ASSIGN_OR_RETURN(std::vector<int32_t> w, weights({":w", ":bias", ":scale", ":fbias"}));
    std::vector<int32_t> ins = {in};
    ins.insert(ins.end(), w.begin(), w.end());
    Emit(StepKind::kQGemm, node, std::move(ins), out, WithParams(runtime::QGemmStepParams{}));
    FinishFloat(y, out, node);
    return absl::OkStatus();
  }
  if (y->quant() == nullptr) {
    return absl::InternalError(absl::StrCat("node '", node.name(), "': int8 output '", y->name(),
                                            "' has no quantization parameters"));
  }
  const passes::QuantParams& qy = *y->quant();
  QCC_ASSIGN_OR_RETURN(const int32_t out, Output(y, DType::kInt8));
  i8_[y] = out;
  switch (node.kind()) {
    case OpKind::kQConv: {
      QCC_ASSIGN_OR_RETURN(const int32_t in, I8(x, node));
      QCC_ASSIGN_OR_RETURN(std::vector<int32_t> w, weights({":w", ":bias", ":multiplier"}));
      const auto& a = node.attrs<ir::ConvAttrs>();
      runtime::QConvStepParams p;
      p.geometry = Geometry(node);
      p.pad_value = x->quant()->zero_point;
      p.zp_out = qy.zero_point;
      std::tie(p.lo, p.hi) = Clamp(a, qy);
      w.insert(w.begin(), in);
      Emit(StepKind::kQConv, node, std::move(w), out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kQGemm: {
      QCC_ASSIGN_OR_RETURN(const int32_t in, I8(x, node));
      QCC_ASSIGN_OR_RETURN(std::vector<int32_t> w, weights({":w", ":bias", ":multiplier"}));
      runtime::QGemmStepParams p;
      p.zp_out = qy.zero_point;
      std::tie(p.lo, p.hi) = Clamp(node.attrs<ir::QGemmAttrs>(), qy);
      w.insert(w.begin(), in);
      Emit(StepKind::kQGemm, node, std::move(w), out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kAdd: {
      QCC_ASSIGN_OR_RETURN(const int32_t a, I8(node.input(0), node));
      QCC_ASSIGN_OR_RETURN(const int32_t b, I8(node.input(1), node));
      const passes::QuantParams& qa = *node.input(0)->quant();
      const passes::QuantParams& qb = *node.input(1)->quant();
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
      const passes::QuantParams& qx = *x->quant();
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
        p.multipliers.push_back(RescaleMultiplier(v->quant()->scale, qy.scale));
        p.zp_in.push_back(v->quant()->zero_point);
      }
      Emit(StepKind::kQConcat, node, ins, out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kQLut: {
      QCC_ASSIGN_OR_RETURN(const int32_t in, I8(x, node));
      QCC_ASSIGN_OR_RETURN(std::vector<int32_t> table, weights({":lut"}));
      Emit(StepKind::kQLut, node, {in, table[0]}, out, WithParams(runtime::NoStepParams{}));
      return absl::OkStatus();
    }
    default:
      break;
  }
  return absl::InternalError(absl::StrCat("node '", node.name(), "': no int8 lowering"));
}

namespace {

/// True for StepActivation's identity.
bool IsIdentity(const runtime::StepActivation& a) {
  const runtime::StepActivation identity;
  return a.lo == identity.lo && a.hi == identity.hi && a.negative_slope == identity.negative_slope;
}

/// The parameters of a Binary step that adds (with any activation), or nullopt.
std::optional<runtime::BinaryStepParams> AddParams(const runtime::PlanStep& step) {
  if (step.kind != static_cast<uint32_t>(StepKind::kBinary)) return std::nullopt;
  absl::StatusOr<runtime::BinaryStepParams> b =
      runtime::DecodeParams<runtime::BinaryStepParams>(step);
  if (!b.ok() || b->op != static_cast<int64_t>(runtime::BinaryOp::kAdd)) return std::nullopt;
  return *b;
}

}  // namespace

void Lowering::FuseSteps() {
  std::vector<runtime::PlanStep>& steps = plan_.steps;
  absl::flat_hash_map<int32_t, int> readers;
  absl::flat_hash_map<int32_t, size_t> writer;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (int32_t b : steps[i].inputs) ++readers[b];
    for (int32_t b : steps[i].outputs) writer[b] = i;
  }
  absl::flat_hash_set<int32_t> bound;  // graph inputs and outputs
  for (const runtime::Binding& b : plan_.inputs) bound.insert(b.buffer);
  for (const runtime::Binding& b : plan_.outputs) bound.insert(b.buffer);
  std::vector<bool> drop(steps.size(), false);
  absl::flat_hash_set<int32_t> orphans;
  // The step (not yet fused away) that writes `mid`, when step `i` is mid's only reader and mid
  // is an intermediate buffer; else null.
  auto sole_producer = [&](int32_t mid) -> runtime::PlanStep* {
    auto w = writer.find(mid);
    if (w == writer.end() || readers[mid] != 1 || bound.contains(mid) || drop[w->second]) {
      return nullptr;
    }
    return &steps[w->second];
  };
  // Each fused step takes the second step's place (every input of both is written by then) and
  // the first step's name; the intermediate buffer goes.
  auto fuse = [&](runtime::PlanStep& first, runtime::PlanStep& second, int32_t mid,
                  runtime::PlanStep fused) {
    fused.name = first.name;
    fused.outputs = second.outputs;
    drop[&first - steps.data()] = true;
    orphans.insert(mid);
    second = std::move(fused);
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    runtime::PlanStep& step = steps[i];
    if (step.kind == static_cast<uint32_t>(StepKind::kQuantize)) {
      // Unary -> Quantize: a GELU before an int8 GEMM.
      const int32_t mid = step.inputs[0];
      runtime::PlanStep* unary = sole_producer(mid);
      if (unary == nullptr || unary->kind != static_cast<uint32_t>(StepKind::kUnary)) continue;
      absl::StatusOr<runtime::UnaryStepParams> u =
          runtime::DecodeParams<runtime::UnaryStepParams>(*unary);
      absl::StatusOr<runtime::QuantizeParams> q =
          runtime::DecodeParams<runtime::QuantizeParams>(step);
      if (!u.ok() || !q.ok()) continue;
      runtime::PlanStep fused = WithParams(runtime::UnaryQuantizeStepParams{*u, *q});
      fused.kind = static_cast<uint32_t>(StepKind::kUnaryQuantize);
      fused.inputs = unary->inputs;
      fuse(*unary, step, mid, std::move(fused));
    } else if (step.kind == static_cast<uint32_t>(StepKind::kQAdd)) {
      // An int8 Add one of whose inputs only a QConv writes (a ResNet's shortcut Add): the
      // QConv with the other input as its residual, the conv's result the Add's A (fp32
      // addition commutes, so which side it was changes no bit).
      absl::StatusOr<runtime::QAddStepParams> add =
          runtime::DecodeParams<runtime::QAddStepParams>(step);
      if (!add.ok()) continue;
      for (int side = 0; side < 2; ++side) {
        const int32_t mid = step.inputs[side], other = step.inputs[1 - side];
        runtime::PlanStep* conv = sole_producer(mid);
        if (conv == nullptr || other == mid ||
            conv->kind != static_cast<uint32_t>(StepKind::kQConv) || conv->inputs.size() != 4 ||
            plan_.buffers[mid].dims != plan_.buffers[other].dims) {
          continue;
        }
        absl::StatusOr<runtime::QConvStepParams> c =
            runtime::DecodeParams<runtime::QConvStepParams>(*conv);
        if (!c.ok()) continue;
        runtime::QAddStepParams a = *add;
        if (side == 1) {
          std::swap(a.mult_a, a.mult_b);
          std::swap(a.zp_a, a.zp_b);
        }
        runtime::PlanStep fused = WithParams(runtime::QConvAddStepParams{*c, a});
        fused.kind = static_cast<uint32_t>(StepKind::kQConvAdd);
        fused.inputs = conv->inputs;
        fused.inputs.push_back(other);
        fuse(*conv, step, mid, std::move(fused));
        break;
      }
    } else if (const std::optional<runtime::BinaryStepParams> add = AddParams(step)) {
      // An Add of two tensors of the same dims, one the result of an fp32 Conv without an
      // activation (a ResNet's or an inverted-residual block's shortcut, any activation after
      // the Add): the Conv with the other as its residual and the Add's activation. Else, with
      // no activation, one the fp32 result of a GEMM: a transformer's residual.
      for (int side = 0; side < 2; ++side) {
        const int32_t mid = step.inputs[side], other = step.inputs[1 - side];
        runtime::PlanStep* first = sole_producer(mid);
        if (first == nullptr || other == mid) continue;
        const runtime::PlanBuffer& y = plan_.buffers[mid];
        const runtime::PlanBuffer& r = plan_.buffers[other];
        if (y.dtype != DType::kFloat32 || r.dtype != DType::kFloat32 || y.dims != r.dims ||
            plan_.buffers[step.outputs[0]].dims != y.dims) {
          continue;
        }
        if (first->kind == static_cast<uint32_t>(StepKind::kConv)) {
          absl::StatusOr<runtime::ConvStepParams> conv =
              runtime::DecodeParams<runtime::ConvStepParams>(*first);
          if (!conv.ok() || !IsIdentity(conv->activation) || first->inputs.size() > 3) continue;
          conv->activation = add->activation;
          runtime::PlanStep fused = WithParams(*conv);
          fused.kind = first->kind;
          fused.inputs = first->inputs;
          fused.inputs.resize(3, -1);
          fused.inputs.push_back(other);
          fuse(*first, step, mid, std::move(fused));
          break;
        }
        const bool dynamic = first->kind == static_cast<uint32_t>(StepKind::kDynamicQGemm);
        if (!IsIdentity(add->activation) ||
            (!dynamic && first->kind != static_cast<uint32_t>(StepKind::kQGemm))) {
          continue;
        }
        const size_t residual_at = dynamic ? 4 : 5;  // after the optional float bias
        if (first->inputs.size() > residual_at) continue;
        runtime::PlanStep fused = *first;
        fused.inputs.resize(residual_at, -1);
        fused.inputs.push_back(other);
        fuse(*first, step, mid, std::move(fused));
        break;
      }
    }
  }
  // DynamicQGemm steps without a residual that read the same X (a transformer's Q, K and V
  // projections of one LayerNorm output) become one DynamicQGemms step, which quantizes X once,
  // where the first of them was: their other inputs are weights, so every product can run there.
  // Grouped in step order, so the plan does not depend on the map's order.
  absl::flat_hash_map<int32_t, std::vector<size_t>> by_x;
  std::vector<int32_t> xs;
  auto is_weight = [&](int32_t b) {
    return b < 0 || plan_.buffers[b].kind == runtime::BufferKind::kWeight;
  };
  for (size_t i = 0; i < steps.size(); ++i) {
    const runtime::PlanStep& s = steps[i];
    if (drop[i] || s.kind != static_cast<uint32_t>(StepKind::kDynamicQGemm) ||
        s.inputs.size() < 3 || s.inputs.size() > 4 || s.outputs.size() != 1 ||
        !is_weight(s.inputs[1]) || !is_weight(s.inputs[2]) ||
        (s.inputs.size() > 3 && !is_weight(s.inputs[3]))) {
      continue;
    }
    std::vector<size_t>& group = by_x[s.inputs[0]];
    if (group.empty()) xs.push_back(s.inputs[0]);
    group.push_back(i);
  }
  bool grouped = false;
  for (int32_t x : xs) {
    const std::vector<size_t>& group = by_x[x];
    if (group.size() < 2) continue;
    runtime::PlanStep merged = WithParams(runtime::NoStepParams{});
    merged.kind = static_cast<uint32_t>(StepKind::kDynamicQGemms);
    merged.name = steps[group[0]].name;
    merged.inputs = {x};
    for (size_t i : group) {
      const runtime::PlanStep& s = steps[i];
      merged.inputs.insert(merged.inputs.end(),
                           {s.inputs[1], s.inputs[2], s.inputs.size() > 3 ? s.inputs[3] : -1});
      merged.outputs.push_back(s.outputs[0]);
      drop[i] = true;
    }
    steps[group[0]] = std::move(merged);
    drop[group[0]] = false;
    grouped = true;
  }
  if (orphans.empty() && !grouped) return;
  std::vector<runtime::PlanStep> kept;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!drop[i]) kept.push_back(std::move(steps[i]));
  }
  steps = std::move(kept);
  // Renumber the buffers without the orphans.
  std::vector<int32_t> renumbered(plan_.buffers.size(), -1);
  std::vector<runtime::PlanBuffer> buffers;
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    if (orphans.contains(static_cast<int32_t>(b))) continue;
    renumbered[b] = static_cast<int32_t>(buffers.size());
    buffers.push_back(std::move(plan_.buffers[b]));
  }
  plan_.buffers = std::move(buffers);
  auto id = [&](int32_t b) { return b < 0 ? b : renumbered[b]; };
  for (runtime::PlanStep& step : steps) {
    for (int32_t& b : step.inputs) b = id(b);
    for (int32_t& b : step.outputs) b = id(b);
  }
  for (runtime::Binding& b : plan_.inputs) b.buffer = id(b.buffer);
  for (runtime::Binding& b : plan_.outputs) b.buffer = id(b.buffer);
}

absl::StatusOr<runtime::Plan> Lowering::Run() {
  plan_.target = "cpu";
  plan_.batch_min = options_.batch_min;
  plan_.batch_max = options_.batch_max;
  for (const ir::Value* v : graph_.inputs()) {
    if (v->type().rank() > 0 && ir::IsSymbol((*v->type().dims)[0])) {
      batch_symbol_ = (*v->type().dims)[0];
      break;
    }
  }
  symbolic_ = ir::ComputeSymbolicValues(graph_);
  for (const ir::Value* v : graph_.inputs()) {
    QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*v));
    if (!IsPlanDType(v->dtype())) {
      return absl::UnimplementedError(absl::StrCat(
          "input '", v->name(), "' is ", DTypeName(v->dtype()),
          "; plans take fp32 or fp16 inputs, or i64, i32 or bool ones (token ids, masks)"));
    }
    const int32_t b = NewBuffer(v->dtype(), dims, BufferKind::kInput, v->name());
    plan_.inputs.push_back({v->name(), b});
    if (!IsFloat(v->dtype())) {
      int_[v] = b;
    } else if (v->dtype() == DType::kFloat16 && options_.fp16) {
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
  QCC_RETURN_IF_ERROR(CheckExtentsKnown());
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
    if (KnownAtCompileTime(*node)) {
      // Shape arithmetic: no step; a float graph output of it is computed from the batch.
      for (const ir::Value* v : node->outputs()) {
        auto out = graph_outputs_.find(v);
        if (out == graph_outputs_.end()) continue;
        EmitBatchAffine(v, out->second, *node);
        f32_[v] = out->second;
      }
      continue;
    }
    if (node->kind() == OpKind::kQuantize) continue;  // where an int8 step first reads it (I8)
    if (node->kind() == OpKind::kDequantize) {
      // Where a float step first reads it (F32); a graph output's right after its producer,
      // into the output buffer (an fp16 one through an fp32 buffer and a Cast).
      const ir::Value* v = node->output(0);
      const ir::Value* q = node->input(0);
      const ir::Node& producer = q->producer() != nullptr ? *q->producer() : *node;
      if (auto f16 = f16_outputs_.find(v); f16 != f16_outputs_.end()) {
        QCC_ASSIGN_OR_RETURN(const int32_t f, F32(v, producer));
        Emit(StepKind::kCast, producer, {f}, f16->second, WithParams(runtime::NoStepParams{}));
        continue;
      }
      auto out = graph_outputs_.find(v);
      if (out == graph_outputs_.end() || f32_.contains(v)) continue;
      QCC_ASSIGN_OR_RETURN(const int32_t in, I8(q, producer));
      EmitDequantize(producer.name(), q, in, out->second);
      f32_[v] = out->second;
      continue;
    }
    if (node->kind() == OpKind::kDynamicQGemm) {
      // Dynamic quantization: X quantized per run, int8 GEMM, fp32 result (bias folded in).
      const ir::Value* result = node->output(0);
      QCC_ASSIGN_OR_RETURN(const int32_t x, F32(node->input(0), *node));
      QCC_ASSIGN_OR_RETURN(const int32_t out, Output(result, DType::kFloat32));
      std::vector<int32_t> ins = {x};
      const char* suffixes[] = {"", ":w", ":w_scale", ":fbias"};
      for (int i = 1; i < node->num_inputs(); ++i) {
        const Tensor* c = node->input(i) != nullptr ? node->input(i)->constant() : nullptr;
        if (c == nullptr) {
          return absl::InternalError(
              absl::StrCat("node '", node->name(), "': input ", i, " is not a constant"));
        }
        ins.push_back(Weight(node->name() + suffixes[i], *c));
      }
      Emit(StepKind::kDynamicQGemm, *node, std::move(ins), out,
           WithParams(runtime::NoStepParams{}));
      FinishFloat(result, out, *node);
    } else {
      QCC_RETURN_IF_ERROR(RunsInt8(*node) ? LowerInt8(*node) : LowerFloat(*node));
    }
    // An fp16 graph output is cast into its output buffer right after its step.
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
      }
    }
  }
  if (options_.fuse_steps) FuseSteps();
  QCC_RETURN_IF_ERROR(PlanArena());
  QCC_RETURN_IF_ERROR(runtime::ValidatePlan(plan_, "lowered plan"));
  return std::move(plan_);
}

}  // namespace lowering_internal

absl::StatusOr<runtime::Plan> LowerToCpuPlan(const ir::Graph& graph, const LowerOptions& options) {
  if (options.batch_min < 1 || options.batch_max < options.batch_min) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch range ", options.batch_min, ":", options.batch_max, " is empty"));
  }
  return lowering_internal::Lowering(graph, options).Run();
}

}  // namespace qcc::cpu
