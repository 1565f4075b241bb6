// The fp32 and data-movement steps of the lowering (backend_cpu/lowering_internal.h).
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backend_cpu/lowering_internal.h"
#include "passes/fuse_util.h"

namespace qcc::cpu::lowering_internal {

absl::Status Lowering::LowerMovement(const ir::Node& node, bool int8) {
  const ir::Value* x = node.input(0);
  const ir::Value* y = node.output(0);
  // Integer tensors (ids, masks) move as they are.
  const bool integer = !int8 && !IsFloat(x->dtype());
  // fp16 plans move f16 bytes (a graph output is produced in fp32).
  const bool half = !int8 && !integer && options_.fp16 && !graph_outputs_.contains(y);
  const DType dtype = int8      ? DType::kInt8
                      : integer ? x->dtype()
                      : half    ? DType::kFloat16
                                : DType::kFloat32;
  QCC_ASSIGN_OR_RETURN(const int32_t in, int8      ? I8(x, node)
                                         : integer ? Int(x, node)
                                         : half    ? F16(x, node)
                                                   : F32(x, node));
  int32_t out;
  if (half || integer) {
    if (integer && graph_outputs_.contains(y)) {
      return absl::UnimplementedError(absl::StrCat(
          "output '", y->name(), "': plans produce fp32 or fp16 outputs computed by a step"));
    }
    QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*y));
    out = NewBuffer(dtype, dims, BufferKind::kArena, half ? y->name() + ":f16" : y->name());
  } else {
    QCC_ASSIGN_OR_RETURN(out, Output(y, dtype));
  }
  (int8 ? i8_ : integer ? int_ : half ? f16_ : f32_)[y] = out;
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
      if (int8) {
        // The output shares the input's parameters: the fill is the value on that grid (0 is
        // the zero point exactly; another value is rounded and saturated like any input).
        p.int_value = QuantizeValue(p.value, x->quant()->scale, x->quant()->zero_point);
      }
      Emit(StepKind::kPad, node, {in}, out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kResize: {  // nearest: an indexed copy of any dtype
      QCC_ASSIGN_OR_RETURN(const runtime::ResizeStepParams p, ResizeParams(node));
      Emit(StepKind::kResize, node, {in}, out, WithParams(p));
      return absl::OkStatus();
    }
    case OpKind::kExpand:  // the target is the output buffer's dims
      Emit(StepKind::kExpand, node, {in}, out, WithParams(runtime::NoStepParams{}));
      return absl::OkStatus();
    default:
      return absl::InternalError("not a movement op");
  }
}

absl::Status Lowering::LowerSequenceOp(const ir::Node& node, bool& handled) {
  handled = true;
  const ir::Value* y = node.output(0);
  auto only_first_output = [&]() -> absl::Status {
    for (int i = 1; i < node.num_outputs(); ++i) {
      if (!node.output(i)->uses().empty() || graph_outputs_.contains(node.output(i))) {
        return absl::UnimplementedError(
            absl::StrCat("node '", node.name(), "' (", ir::OpName(node.kind()),
                         "): only its first output can be used in a plan"));
      }
    }
    return absl::OkStatus();
  };
  // One f32 step from `ins` to y.
  auto emit = [&](StepKind kind, std::vector<int32_t> ins, PlanStep step) -> absl::Status {
    QCC_RETURN_IF_ERROR(only_first_output());
    QCC_ASSIGN_OR_RETURN(const int32_t out, Output(y, DType::kFloat32));
    Emit(kind, node, std::move(ins), out, std::move(step));
    FinishFloat(y, out, node);
    return absl::OkStatus();
  };
  switch (node.kind()) {
    case OpKind::kGather: {
      QCC_ASSIGN_OR_RETURN(const int32_t idx, Int(node.input(1), node));
      const runtime::AxisStepParams p{node.attrs<ir::AxisAttrs>().axis};
      if (!IsFloat(node.input(0)->dtype())) {  // integers stay integers
        QCC_ASSIGN_OR_RETURN(const int32_t data, Int(node.input(0), node));
        QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*y));
        const int32_t out = NewBuffer(y->dtype(), dims, BufferKind::kArena, y->name());
        Emit(StepKind::kGather, node, {data, idx}, out, WithParams(p));
        int_[y] = out;
        return absl::OkStatus();
      }
      QCC_ASSIGN_OR_RETURN(const int32_t data, F32(node.input(0), node));
      return emit(StepKind::kGather, {data, idx}, WithParams(p));
    }
    case OpKind::kCast: {
      const ir::Value* x = node.input(0);
      if (y->dtype() == DType::kFloat16 && IsFloat(x->dtype())) {
        // An f16 graph output is its input's fp32 buffer, rounded into the output's f16 buffer
        // after the step as any f16 output is (a QDQ export of an fp16 model ends in one).
        if (f16_outputs_.contains(y)) {
          QCC_ASSIGN_OR_RETURN(const int32_t in, F32(x, node));
          f32_[y] = in;
          return absl::OkStatus();
        }
        // Inside the graph it rounds, as ONNX's Cast does (an f32 -> f16 -> f32 round trip
        // overflows to inf past 65504): an f16 buffer, which fp32 readers read back through a
        // Cast (F32). An input an fp16 plan already holds in f16 is that buffer.
        if (auto h = f16_.find(x); h != f16_.end()) {
          f16_[y] = h->second;
          return absl::OkStatus();
        }
        QCC_ASSIGN_OR_RETURN(const int32_t in, F32(x, node));
        QCC_ASSIGN_OR_RETURN(std::vector<int64_t> dims, PlanDims(*y));
        const int32_t h = NewBuffer(DType::kFloat16, dims, BufferKind::kArena, y->name() + ":f16");
        Emit(StepKind::kCast, node, {in}, h, WithParams(runtime::NoStepParams{}));
        f16_[y] = h;
        return absl::OkStatus();
      }
      if (y->dtype() != DType::kFloat32) break;
      if (IsFloat(x->dtype())) {  // f32 -> f32 (an f16 value is computed in f32 here)
        QCC_ASSIGN_OR_RETURN(const int32_t in, F32(x, node));
        if (graph_outputs_.contains(y)) break;
        f32_[y] = in;
        return absl::OkStatus();
      }
      QCC_ASSIGN_OR_RETURN(const int32_t in, Int(x, node));
      return emit(StepKind::kCast, {in}, WithParams(runtime::NoStepParams{}));
    }
    case OpKind::kMatMul: {
      if (node.input(0)->type().rank() == 2 && node.input(1)->type().rank() == 2) break;  // Gemm
      if (node.input(0)->type().rank() < 2 || node.input(1)->type().rank() < 2) {
        return absl::UnimplementedError(
            absl::StrCat("node '", node.name(), "': MatMul of a 1-D operand in a plan"));
      }
      QCC_ASSIGN_OR_RETURN(const int32_t a, F32(node.input(0), node));
      QCC_ASSIGN_OR_RETURN(const int32_t b, F32(node.input(1), node));
      return emit(StepKind::kMatMul, {a, b}, WithParams(runtime::NoStepParams{}));
    }
    case OpKind::kPow: {  // x^2 (a variance written out) as x * x
      const std::optional<float> e = passes::fuse::ScalarF32(node.input(1));
      if (!e || *e != 2.0f) break;
      QCC_ASSIGN_OR_RETURN(const int32_t x, F32(node.input(0), node));
      runtime::BinaryStepParams p;
      p.op = static_cast<int64_t>(runtime::BinaryOp::kMul);
      return emit(StepKind::kBinary, {x, x}, WithParams(p));
    }
    case OpKind::kReduceMean:
    case OpKind::kReduceSum: {
      const ir::Value* x = node.input(0);
      const int64_t rank = x->type().rank();
      const Tensor* axes_data = node.input(1) ? passes::fuse::ConstantData(node.input(1)) : nullptr;
      if (node.input(1) != nullptr && axes_data == nullptr) {
        return absl::UnimplementedError(
            absl::StrCat("node '", node.name(), "': reduction axes computed at run time"));
      }
      std::vector<bool> reduced(rank, false);
      if (axes_data == nullptr || axes_data->numel() == 0) {
        if (node.attrs<ir::ReduceAttrs>().noop_with_empty_axes != 0) {  // the identity
          if (graph_outputs_.contains(y)) break;
          QCC_ASSIGN_OR_RETURN(const int32_t in, F32(x, node));
          f32_[y] = in;
          return absl::OkStatus();
        }
        reduced.assign(rank, true);
      } else {
        for (int64_t i = 0; i < axes_data->numel(); ++i) {
          int64_t a = axes_data->GetAsInt64(i);
          if (a < 0) a += rank;
          if (a >= 0 && a < rank) reduced[a] = true;
        }
      }
      runtime::ReduceStepParams p;
      p.op = static_cast<int64_t>(node.kind() == OpKind::kReduceMean ? runtime::ReduceOp::kMean
                                                                     : runtime::ReduceOp::kSum);
      for (int64_t a = 0; a < rank; ++a) {
        if (reduced[a]) p.axes.push_back(a);
      }
      if (rank > 0 && reduced[0] && !ir::IsKnown((*x->type().dims)[0])) {
        return absl::UnimplementedError(
            absl::StrCat("node '", node.name(), "': a reduction over the dynamic batch axis"));
      }
      QCC_ASSIGN_OR_RETURN(const int32_t in, F32(x, node));
      return emit(StepKind::kReduce, {in}, WithParams(p));
    }
    case OpKind::kLayerNormalization: {
      const auto& a = node.attrs<ir::LayerNormAttrs>();
      std::vector<int32_t> ins;
      for (int i = 0; i < 3; ++i) {
        if (node.input(i) == nullptr) continue;
        QCC_ASSIGN_OR_RETURN(const int32_t b, F32(node.input(i), node));
        ins.push_back(b);
      }
      return emit(StepKind::kLayerNorm, std::move(ins),
                  WithParams(runtime::LayerNormStepParams{a.axis, a.epsilon}));
    }
    case OpKind::kAttention: {
      const auto& a = node.attrs<ir::AttentionAttrs>();
      std::vector<int32_t> ins;
      for (int i = 0; i < node.num_inputs(); ++i) {
        if (node.input(i) == nullptr) continue;
        QCC_ASSIGN_OR_RETURN(const int32_t b, F32(node.input(i), node));
        ins.push_back(b);
      }
      const bool int8 = a.qcc_int8 != 0;
      return emit(int8 ? StepKind::kQAttention : StepKind::kAttention, std::move(ins),
                  WithParams(runtime::AttentionStepParams{a.q_num_heads, a.kv_num_heads, a.scale}));
    }
    default:
      break;
  }
  handled = false;
  return absl::OkStatus();
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
    case OpKind::kExpand:
      return LowerMovement(node, /*int8=*/false);
    case OpKind::kResize:
      if (node.attrs<ir::ResizeAttrs>().mode == ir::ResizeMode::kNearest) {
        return LowerMovement(node, /*int8=*/false);
      }
      break;  // linear and cubic compute in fp32, below
    default:
      break;
  }
  const ir::Value* y = node.output(0);
  bool handled = false;
  QCC_RETURN_IF_ERROR(LowerSequenceOp(node, handled));
  if (handled) return absl::OkStatus();
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
  if (std::optional<UnaryCall> call = ir::UnaryCallOf(node); call && IsFloat(y->dtype())) {
    // Every elementwise function, by its number (support/unary_fn.h); the step holds two
    // constants.
    if (call->gamma != 0.0f) {
      return absl::UnimplementedError(absl::StrCat(
          "node '", node.name(), "' (", ir::OpName(node.kind()),
          "): a function of three constants cannot be put in a plan yet (the Unary step holds "
          "two)"));
    }
    runtime::UnaryStepParams p;
    p.op = static_cast<int64_t>(call->fn);
    p.alpha = call->alpha;
    p.beta = call->beta;
    if (call->fn == UnaryFn::kClip) {  // [alpha, beta] = [min, max] from constant inputs
      for (int i = 1; i < node.num_inputs(); ++i) {
        if (node.input(i) == nullptr) continue;
        std::optional<float> v = passes::fuse::ScalarF32(node.input(i));
        if (!v) {
          return absl::UnimplementedError(
              absl::StrCat("node '", node.name(), "': Clip with non-constant bounds"));
        }
        (i == 1 ? p.alpha : p.beta) = *v;
      }
    }
    QCC_RETURN_IF_ERROR(input(0));
    QCC_ASSIGN_OR_RETURN(const int32_t out, Output(y, DType::kFloat32));
    Emit(StepKind::kUnary, node, ins, out, WithParams(p));
    FinishFloat(y, out, node);
    return absl::OkStatus();
  }
  switch (node.kind()) {
    case OpKind::kConv: {
      const auto& a = node.attrs<ir::ConvAttrs>();
      kind = StepKind::kConv;
      step = WithParams(runtime::ConvStepParams{Geometry(node), FloatActivation(a)});
      num_inputs = 3;
      break;
    }
    case OpKind::kConvTranspose: {
      QCC_ASSIGN_OR_RETURN(const runtime::ConvTransposeStepParams p, ConvTransposeParams(node));
      kind = StepKind::kConvTranspose;
      step = WithParams(p);
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
    case OpKind::kResize: {  // linear, cubic (nearest is a movement step above)
      QCC_ASSIGN_OR_RETURN(const runtime::ResizeStepParams p, ResizeParams(node));
      kind = StepKind::kResize;
      step = WithParams(p);
      break;
    }
    case OpKind::kConstantOfShape: {
      // An Expand of its one value to the output's dims (which the shape input determined).
      const Tensor& value = node.attrs<ir::ConstantAttrs>().value;
      if (!IsFloat(y->dtype())) {
        return absl::UnimplementedError(
            absl::StrCat("node '", node.name(), "' (ConstantOfShape): a ", DTypeName(y->dtype()),
                         " tensor computed at run time cannot be put in a plan yet"));
      }
      Tensor one = value.defined() ? CastTensor(value, DType::kFloat32).Reshaped({1})
                                   : Tensor(DType::kFloat32, {1});
      if (!value.defined()) one.data<float>()[0] = 0.0f;
      ins.push_back(Weight(node.name() + ":value", one));  // f32, as the step's output
      kind = StepKind::kExpand;
      step = WithParams(runtime::NoStepParams{});
      num_inputs = 0;
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

}  // namespace qcc::cpu::lowering_internal
