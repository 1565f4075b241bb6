// QdqForm: see passes/qdq_form.h.
#include "passes/qdq_form.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/shape_inference.h"
#include "passes/fuse_util.h"
#include "passes/quantize.h"
#include "support/status.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

/// An int8 tensor of the quantized graph (it has a scale and zero point).
bool IsInt8(const ir::Value* v) { return v != nullptr && v->quant() != nullptr; }

/// The fused graph's name of an int8 value (`x` for `x:int8` and `x:int8:requantized`), and the
/// name of its ONNX int8 tensor.
constexpr absl::string_view kRequantized = ":int8:requantized";
constexpr absl::string_view kInt8 = ":int8";
std::string Stem(const ir::Value& v) {
  absl::string_view name = v.name();
  if (absl::EndsWith(name, kRequantized)) {
    name.remove_suffix(kRequantized.size());
  } else if (absl::EndsWith(name, kInt8)) {
    name.remove_suffix(kInt8.size());
  }
  return std::string(name);
}
std::string Int8Name(const ir::Value& v) {
  return absl::StrCat(Stem(v),
                      absl::EndsWith(v.name(), kRequantized) ? "_requantized" : "_quantized");
}

template <typename A, typename = void>
struct TakesUnaryConstants : std::false_type {};
template <typename A>
struct TakesUnaryConstants<
    A, std::void_t<decltype(std::declval<A&>().TakeUnaryConstants(std::declval<UnaryCall>()))>>
    : std::true_type {};

class QdqWriter {
 public:
  QdqWriter(const ir::Graph& quantized, const QdqOptions& options) : in_(quantized), o_(options) {}

  absl::StatusOr<std::unique_ptr<ir::Graph>> Run() {
    out_ = in_.EmptyLike();
    for (const ir::Value* v : in_.outputs()) outputs_.insert(v);
    // Names written as they are: inputs, outputs, constants, the results of float ops. Int8
    // values and dequantized ones get new names.
    for (const auto& v : in_.values()) {
      const ir::Node* p = v->producer();
      const bool dequantized = p != nullptr && p->kind() == OpKind::kDequantize;
      if (!IsInt8(v.get()) && (!dequantized || outputs_.contains(v.get()))) {
        names_.insert(v->name());
      }
    }
    for (const auto& n : in_.nodes()) {
      node_names_.insert(n->name());
      if (n->kind() == OpKind::kDequantize) dequantize_.emplace(n->input(0), n.get());
    }
    for (const ir::Value* v : in_.inputs()) values_[v] = out_->AddInput(v->name(), v->type());
    for (const auto& n : in_.nodes()) {
      if (!written_.contains(n.get())) QCC_RETURN_IF_ERROR(Write(*n));
    }
    for (const ir::Value* v : in_.outputs()) {
      QCC_ASSIGN_OR_RETURN(ir::Value * o, Val(v));
      out_->AddOutput(o);
    }
    QCC_RETURN_IF_ERROR(out_->TopologicalSort());
    return std::move(out_);
  }

 private:
  struct Grid {
    ir::Value* scale;
    ir::Value* zero_point;
  };

  std::string Fresh(absl::string_view stem) { return FreshIn(names_, stem); }
  std::string FreshNode(absl::string_view stem) { return FreshIn(node_names_, stem); }
  static std::string FreshIn(absl::flat_hash_set<std::string>& names, absl::string_view stem) {
    std::string name(stem);
    for (int k = 1; names.contains(name); ++k) name = absl::StrCat(stem, "_", k);
    names.insert(name);
    return name;
  }

  ir::Value* NewConstant(absl::string_view stem, Tensor t) {
    return out_->NewConstant(Fresh(stem), std::move(t));
  }

  static Tensor Floats(const std::vector<float>& v, bool scalar) {
    Tensor t(DType::kFloat32, scalar ? Dims{} : Dims{static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.begin() + (scalar ? 1 : v.size()), t.data<float>());
    return t;
  }

  /// The ONNX type of an int8 value: int8, or uint8 for uint8 activations.
  ir::TensorType Int8Type(const ir::Value& v) const {
    ir::TensorType t = v.type();
    t.dtype = o_.uint8_activations ? DType::kUInt8 : DType::kInt8;
    return t;
  }
  static ir::TensorType FloatType(const ir::Value& v) {
    ir::TensorType t = v.type();
    t.dtype = DType::kFloat32;
    return t;
  }

  /// The scale and zero point constants of an int8 value, shared by its Q and DQ nodes.
  Grid GridOf(const ir::Value& v) {
    if (auto it = grids_.find(&v); it != grids_.end()) return it->second;
    const ir::QuantParams& p = *v.quant();
    const std::string stem = Stem(v);
    Tensor zp(o_.uint8_activations ? DType::kUInt8 : DType::kInt8, {});
    if (o_.uint8_activations) {
      zp.data<uint8_t>()[0] = static_cast<uint8_t>(p.zero_point + 128);
    } else {
      zp.data<int8_t>()[0] = static_cast<int8_t>(p.zero_point);
    }
    Grid g{NewConstant(stem + "_scale", Floats({p.scale}, true)),
           NewConstant(stem + "_zero_point", std::move(zp))};
    grids_.emplace(&v, g);
    return g;
  }

  /// The ONNX value standing for `v`: a copy of a constant, or what a written node gave.
  absl::StatusOr<ir::Value*> Val(const ir::Value* v) {
    if (auto it = values_.find(v); it != values_.end()) return it->second;
    if (v->constant() != nullptr) {
      return values_[v] = out_->NewConstant(v->name(), *v->constant());
    }
    return absl::InternalError(
        absl::StrCat("tensor '", v->name(), "' is used before it is written"));
  }

  /// DequantizeLinear of the int8 value `q` into a float tensor named `name`.
  absl::StatusOr<ir::Value*> Dequantize(const ir::Value* q, absl::string_view node_stem,
                                        std::string name) {
    QCC_ASSIGN_OR_RETURN(ir::Value * x, Val(q));
    const Grid g = GridOf(*q);
    ir::Node* dq = out_->AddNode(OpKind::kDequantizeLinear, FreshNode(node_stem),
                                 {x, g.scale, g.zero_point}, {std::move(name)});
    dq->output(0)->set_type(FloatType(*q));
    return dq->output(0);
  }

  /// The float form of the int8 value `q` that float ops read: the output of the quantized
  /// graph's own Dequantize of it, else a DequantizeLinear of its own.
  absl::StatusOr<ir::Value*> Float(const ir::Value* q) {
    if (auto it = float_.find(q); it != float_.end()) return it->second;
    if (auto d = dequantize_.find(q); d != dequantize_.end() && !written_.contains(d->second)) {
      QCC_RETURN_IF_ERROR(WriteDequantize(*d->second));
      return float_.at(q);
    }
    const std::string stem = Stem(*q);
    QCC_ASSIGN_OR_RETURN(ir::Value * f,
                         Dequantize(q, stem + "_DequantizeLinear", Fresh(stem + "_dequantized")));
    return float_[q] = f;
  }

  /// The name of the float result an op computes for the int8 value `y`: the tensor's own name,
  /// or NAME_float when NAME is a graph output (the DequantizeLinear after it keeps NAME).
  std::string ResultName(const ir::Value& y) {
    const std::string stem = Stem(y);
    for (const ir::Value* o : in_.outputs()) {
      if (o->name() == stem) return Fresh(stem + "_float");
    }
    return Fresh(stem);
  }

  /// QuantizeLinear of the float `f` onto the grid of the int8 value `y`, which it stands for.
  void QuantizeTo(ir::Value* f, const ir::Value* y) {
    const Grid g = GridOf(*y);
    ir::Node* q = out_->AddNode(OpKind::kQuantizeLinear, FreshNode(Stem(*y) + "_QuantizeLinear"),
                                {f, g.scale, g.zero_point}, {Fresh(Int8Name(*y))});
    q->output(0)->set_type(Int8Type(*y));
    values_[y] = q->output(0);
  }

  /// A float result `f` of `node` standing for its output `y`: quantized when y is int8.
  void Result(ir::Value* f, const ir::Value* y) {
    if (IsInt8(y)) {
      f->set_type(FloatType(*y));
      QuantizeTo(f, y);
    } else {
      f->set_type(y->type());
      if (const Tensor* c = y->constant()) f->set_constant(*c);
      values_[y] = f;
    }
  }

  std::string OutputName(const ir::Value& y) { return IsInt8(&y) ? ResultName(y) : y.name(); }

  absl::Status Write(const ir::Node& node) {
    const OpKind kind = node.kind();
    if (kind == OpKind::kDequantize) return WriteDequantize(node);
    if (kind == OpKind::kQuantize) {
      QCC_ASSIGN_OR_RETURN(ir::Value * x, Val(node.input(0)));
      QuantizeTo(x, node.output(0));
      return absl::OkStatus();
    }
    if (kind == OpKind::kQConv || kind == OpKind::kQGemm) return WriteGemmLike(node);
    if (kind == OpKind::kQLut) return WriteLut(node);
    if (kind == OpKind::kDynamicQGemm) {
      return absl::UnimplementedError(
          absl::StrCat("node '", node.name(),
                       "' is quantized at run time (dynamic quantization), which has no QDQ form "
                       "here; export a calibrated (static) int8 compile"));
    }
    if (kind == OpKind::kAttention && node.attrs<ir::AttentionAttrs>().qcc_int8 != 0) {
      return absl::UnimplementedError(
          absl::StrCat("node '", node.name(), "' is an int8 qcc.Attention, which has no QDQ form"));
    }
    // Every other op: the same op, in float between DQ and Q where it reads or writes int8.
    return WriteOp(node);
  }

  absl::Status WriteDequantize(const ir::Node& node) {
    written_.insert(&node);
    const ir::Value* q = node.input(0);
    const ir::Value* f = node.output(0);
    const std::string name =
        outputs_.contains(f) ? f->name() : Fresh(absl::StrCat(f->name(), "_dequantized"));
    QCC_ASSIGN_OR_RETURN(ir::Value * out, Dequantize(q, Stem(*q) + "_DequantizeLinear", name));
    values_[f] = out;
    float_.emplace(q, out);
    return absl::OkStatus();
  }

  absl::Status WriteOp(const ir::Node& node) {
    // Shape and Size read only dims, which the int8 tensor has too.
    const bool dims_only = node.kind() == OpKind::kShape || node.kind() == OpKind::kSize;
    std::vector<ir::Value*> ins;
    for (const ir::Value* v : node.inputs()) {
      if (v == nullptr) {
        ins.push_back(nullptr);
        continue;
      }
      QCC_ASSIGN_OR_RETURN(ir::Value * in, IsInt8(v) && !dims_only ? Float(v) : Val(v));
      ins.push_back(in);
    }
    std::vector<std::string> names;
    for (const ir::Value* y : node.outputs()) names.push_back(OutputName(*y));
    ir::Node* n = out_->AddNode(node.kind(), node.name(), std::move(ins), std::move(names));
    n->set_attrs(node.attrs_variant());
    for (int i = 0; i < node.num_outputs(); ++i) Result(n->output(i), node.output(i));
    return absl::OkStatus();
  }

  /// DequantizeLinear of the int8 weights of `node` (rows: output channels, `w`'s channel
  /// scales), as [K, ...] on axis 0, or transposed to [K, N] on axis 1.
  absl::StatusOr<ir::Value*> Weights(const ir::Node& node, const ir::Value& w, bool transpose) {
    const ir::ChannelScales* scales = w.channel_scales();
    if (w.constant() == nullptr || w.dtype() != DType::kInt8 || scales == nullptr ||
        w.constant()->rank() < 1 ||
        static_cast<int64_t>(scales->scales.size()) != w.constant()->dim(0) ||
        (transpose && w.constant()->rank() != 2)) {
      return absl::InternalError(absl::StrCat("node '", node.name(), "': weights '", w.name(),
                                              "' are not int8 rows with one scale each"));
    }
    const Tensor& rows = *w.constant();
    const int64_t k = rows.dim(0);
    const int64_t per_row = rows.numel() / std::max<int64_t>(k, 1);
    Tensor t = rows;
    if (transpose) {
      t = Tensor(DType::kInt8, {per_row, k});
      for (int64_t r = 0; r < k; ++r) {
        for (int64_t c = 0; c < per_row; ++c) {
          t.data<int8_t>()[c * k + r] = rows.data<int8_t>()[r * per_row + c];
        }
      }
    }
    const std::vector<float>& s = scales->scales;
    const bool per_tensor =
        std::all_of(s.begin(), s.end(), [&](float x) { return x == s.front(); });
    Tensor zeros(DType::kInt8, per_tensor ? Dims{} : Dims{k});
    std::fill(zeros.data<int8_t>(), zeros.data<int8_t>() + zeros.numel(), 0);
    const std::string stem = absl::StrCat(node.name(), "_weight");
    ir::Value* q = NewConstant(stem + "_quantized", t);
    ir::Value* scale = NewConstant(stem + "_scale", Floats(s, per_tensor));
    ir::Value* zp = NewConstant(stem + "_zero_point", std::move(zeros));
    ir::Node* dq = out_->AddNode(OpKind::kDequantizeLinear, FreshNode(stem + "_DequantizeLinear"),
                                 {q, scale, zp}, {Fresh(stem + "_dequantized")});
    dq->mutable_attrs<ir::DequantizeLinearAttrs>().axis = transpose ? 1 : 0;
    dq->output(0)->set_type(ir::TensorType(DType::kFloat32, t.dims()));
    return dq->output(0);
  }

  /// DequantizeLinear of the int32 bias round(b / (s_x * s_w[k])) at scale s_x * s_w[k]: the
  /// plan's integer bias without its zero-point correction, which the int8 sum of
  /// (x - zp_x) * w adds.
  absl::StatusOr<ir::Value*> IntBias(const ir::Node& node, const ir::Value& x, const ir::Value& w,
                                     const ir::Value& b) {
    const std::vector<float>& s = w.channel_scales()->scales;
    const int64_t k = static_cast<int64_t>(s.size());
    if (b.constant() == nullptr || b.dtype() != DType::kFloat32 || b.constant()->numel() != k) {
      return absl::InternalError(
          absl::StrCat("node '", node.name(), "': the bias is not an fp32 constant [", k, "]"));
    }
    const QuantParams in{x.quant()->scale, 0};
    Tensor bias(DType::kInt32, {k});
    std::vector<float> scale(k);
    for (int64_t r = 0; r < k; ++r) {
      bias.data<int32_t>()[r] = FoldedBias(b.constant()->data<float>()[r], in, s[r], 0);
      scale[r] = in.scale * s[r];
    }
    const bool per_tensor =
        std::all_of(s.begin(), s.end(), [&](float v) { return v == s.front(); });
    const std::string stem = absl::StrCat(node.name(), "_bias");
    ir::Value* q = NewConstant(stem + "_quantized", std::move(bias));
    ir::Value* sc = NewConstant(stem + "_scale", Floats(scale, per_tensor));
    ir::Node* dq = out_->AddNode(OpKind::kDequantizeLinear, FreshNode(stem + "_DequantizeLinear"),
                                 {q, sc}, {Fresh(stem + "_dequantized")});
    dq->mutable_attrs<ir::DequantizeLinearAttrs>().axis = 0;
    dq->output(0)->set_type(ir::TensorType(DType::kFloat32, {k}));
    return dq->output(0);
  }

  absl::Status WriteGemmLike(const ir::Node& node) {
    if (node.num_inputs() > 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name(),
          "' has its int32 bias and multipliers (fold-scales ran); the QDQ form is written from "
          "the scale form (passes::RealizeInt8 with QuantizedForm::kScale)"));
    }
    const ir::Value* x = node.input(0);
    const ir::Value* w = node.input(1);
    const ir::Value* b = node.num_inputs() > 2 ? node.input(2) : nullptr;
    const ir::Value* y = node.output(0);
    if (!IsInt8(x)) {
      return absl::InternalError(absl::StrCat("node '", node.name(), "': its input is not int8"));
    }
    QCC_ASSIGN_OR_RETURN(ir::Value * xf, Float(x));
    if (node.kind() == OpKind::kQConv) {
      QCC_ASSIGN_OR_RETURN(ir::Value * wf, Weights(node, *w, false));
      std::vector<ir::Value*> ins = {xf, wf};
      if (b != nullptr) {
        QCC_ASSIGN_OR_RETURN(ir::Value * bf, IntBias(node, *x, *w, *b));
        ins.push_back(bf);
      }
      ir::Node* n = out_->AddNode(OpKind::kConv, node.name(), std::move(ins), {ResultName(*y)});
      n->set_attrs(node.attrs_variant());
      Result(n->output(0), y);
      return absl::OkStatus();
    }
    const ir::QGemmAttrs& a = node.attrs<ir::QGemmAttrs>();
    // An fp32 result adds its float bias after scaling, as the plan does.
    ir::Value* bias = nullptr;
    if (b != nullptr && a.float_result != 0) {
      bias = NewConstant(absl::StrCat(node.name(), "_bias"), *b->constant());
    } else if (b != nullptr) {
      QCC_ASSIGN_OR_RETURN(bias, IntBias(node, *x, *w, *b));
    }
    const std::string name = OutputName(*y);
    if (x->type().rank() == 2) {
      QCC_ASSIGN_OR_RETURN(ir::Value * wf, Weights(node, *w, false));
      ir::GemmAttrs g;
      g.transB = 1;
      g.activation = a.activation;
      g.activation_alpha = a.activation_alpha;
      g.activation_min = a.activation_min;
      g.activation_max = a.activation_max;
      ir::Node* n = out_->AddNode(OpKind::kGemm, node.name(), {xf, wf, bias}, {name});
      n->set_attrs(g);
      Result(n->output(0), y);
      return absl::OkStatus();
    }
    // [.., K] x [K, N], then the bias (and the activation) in an Add.
    if (bias == nullptr && a.activation != ir::Activation::kNone) {
      return absl::UnimplementedError(
          absl::StrCat("node '", node.name(),
                       "': an int8 MatMul with a fused activation and no bias has no "
                       "QDQ form here"));
    }
    QCC_ASSIGN_OR_RETURN(ir::Value * wf, Weights(node, *w, true));
    ir::Node* mm = out_->AddNode(
        OpKind::kMatMul, bias != nullptr ? FreshNode(node.name() + "_MatMul") : node.name(),
        {xf, wf}, {bias != nullptr ? Fresh(node.name() + "_matmul") : name});
    if (bias == nullptr) {
      Result(mm->output(0), y);
      return absl::OkStatus();
    }
    mm->output(0)->set_type(FloatType(*y));
    ir::AddAttrs add;
    add.activation = a.activation;
    add.activation_alpha = a.activation_alpha;
    add.activation_min = a.activation_min;
    add.activation_max = a.activation_max;
    ir::Node* n = out_->AddNode(OpKind::kAdd, node.name(), {mm->output(0), bias}, {name});
    n->set_attrs(add);
    Result(n->output(0), y);
    return absl::OkStatus();
  }

  absl::Status WriteLut(const ir::Node& node) {
    const UnaryCall call = node.attrs<ir::QLutAttrs>().call();
    // The op whose int8 form is a table of this function (ops.def's Int8 and Unary columns).
    std::optional<OpKind> kind;
    for (int k = 0; k < ir::kNumOpKinds && !kind; ++k) {
      const auto candidate = static_cast<OpKind>(k);
      if (ir::Int8FormOf(candidate) == ir::Int8Form::kLut && ir::UnaryFnOf(candidate) == call.fn) {
        kind = candidate;
      }
    }
    if (!kind) {
      return absl::UnimplementedError(
          absl::StrCat("node '", node.name(), "': no ONNX op has the function of its int8 table"));
    }
    QCC_ASSIGN_OR_RETURN(ir::Value * xf, Float(node.input(0)));
    std::vector<ir::Value*> ins = {xf};
    if (*kind == OpKind::kClip) {  // its bounds are inputs; an infinite one is absent
      const float bounds[2] = {call.alpha, call.beta};
      const char* suffix[2] = {"_min", "_max"};
      for (int i = 0; i < 2; ++i) {
        ins.push_back(std::isfinite(bounds[i])
                          ? NewConstant(node.name() + suffix[i], Floats({bounds[i]}, true))
                          : nullptr);
      }
    }
    const ir::Value* y = node.output(0);
    ir::Node* n = out_->AddNode(*kind, node.name(), std::move(ins), {ResultName(*y)});
    ir::Attrs attrs = ir::DefaultAttrs(*kind);
    std::visit(
        [&call](auto& a) {
          if constexpr (TakesUnaryConstants<std::decay_t<decltype(a)>>::value) {
            a.TakeUnaryConstants(call);
          }
        },
        attrs);
    n->set_attrs(std::move(attrs));
    if (*kind != OpKind::kClip) {
      const std::optional<UnaryCall> written = ir::UnaryCallOf(*n);
      if (!written || written->fn != call.fn || written->alpha != call.alpha ||
          written->beta != call.beta || written->gamma != call.gamma) {
        return absl::InternalError(absl::StrCat("node '", node.name(), "': its ", ir::OpName(*kind),
                                                " does not keep the table's constants"));
      }
    }
    Result(n->output(0), y);
    return absl::OkStatus();
  }

  const ir::Graph& in_;
  const QdqOptions& o_;
  std::unique_ptr<ir::Graph> out_;
  absl::flat_hash_set<const ir::Value*> outputs_;
  absl::flat_hash_set<std::string> names_, node_names_;
  /// Each value of the quantized graph in the ONNX graph, and the float form of int8 values.
  absl::flat_hash_map<const ir::Value*, ir::Value*> values_, float_;
  absl::flat_hash_map<const ir::Value*, Grid> grids_;
  /// The quantized graph's Dequantize node of each int8 value (the first), and the nodes written
  /// ahead of their turn.
  absl::flat_hash_map<const ir::Value*, const ir::Node*> dequantize_;
  absl::flat_hash_set<const ir::Node*> written_;
};

}  // namespace

absl::StatusOr<QdqModel> QdqForm(const ir::Graph& quantized, const QdqOptions& options) {
  QdqModel m;
  QCC_ASSIGN_OR_RETURN(m.graph, QdqWriter(quantized, options).Run());
  // The model's output types: the writer types a DequantizeLinear's output fp32 even where the
  // model's output (an fp16 model's) is fp16.
  std::vector<DType> output_types;
  for (const ir::Value* out : quantized.outputs()) output_types.push_back(out->dtype());
  QCC_ASSIGN_OR_RETURN(m.widened, WidenReducedFloats(*m.graph, output_types));
  return m;
}

absl::StatusOr<int> WidenReducedFloats(ir::Graph& graph, std::vector<DType> output_types) {
  if (output_types.empty()) {
    for (const ir::Value* out : graph.outputs()) output_types.push_back(out->dtype());
  }
  if (output_types.size() != graph.outputs().size()) {
    return absl::InternalError(absl::StrCat("WidenReducedFloats: ", output_types.size(),
                                            " output types for ", graph.outputs().size(),
                                            " graph outputs"));
  }
  // The model's interface keeps its fp16 (plans take fp16, not bf16): an fp16 graph input keeps
  // its type and feeds a Cast to fp32 that its consumers read; an output the model has in fp16
  // is a Cast from the fp32 value. Whoever fed the fp16 model feeds its QDQ export the same
  // arrays and reads the same type back.
  std::vector<ir::Value*> edge_inputs;
  for (ir::Value* in : graph.inputs()) {
    if (in->dtype() == DType::kFloat16) edge_inputs.push_back(in);
  }
  int changed = 0;
  for (const auto& v : graph.values()) {
    if (!IsReducedFloat(v->dtype())) continue;
    if (std::find(edge_inputs.begin(), edge_inputs.end(), v.get()) != edge_inputs.end()) continue;
    ++changed;
    if (v->constant() != nullptr) {
      v->set_constant(CastTensor(*v->constant(), DType::kFloat32));
    } else {
      ir::TensorType t = v->type();
      t.dtype = DType::kFloat32;
      v->set_type(t);
    }
  }
  for (const auto& n : graph.nodes()) {
    if (n->kind() == OpKind::kCast && IsReducedFloat(n->attrs<ir::CastAttrs>().to)) {
      n->mutable_attrs<ir::CastAttrs>().to = DType::kFloat32;
    }
    if (n->kind() == OpKind::kConstant || n->kind() == OpKind::kConstantOfShape) {
      Tensor& value = n->mutable_attrs<ir::ConstantAttrs>().value;
      if (value.defined() && IsReducedFloat(value.dtype())) {
        value = CastTensor(value, DType::kFloat32);
      }
    }
  }
  // Node names the Casts must not repeat (ONNX Runtime refuses two nodes of one name).
  absl::flat_hash_set<std::string> node_names;
  for (const auto& n : graph.nodes()) node_names.insert(n->name());
  auto node_name = [&](const std::string& stem) {
    std::string name = stem;
    for (int k = 1; node_names.contains(name); ++k) name = absl::StrCat(stem, "_", k);
    node_names.insert(name);
    return name;
  };
  bool added = false;
  for (ir::Value* in : edge_inputs) {
    if (in->uses().empty()) continue;  // nothing reads it in fp32
    ir::Node* cast = graph.AddNode(OpKind::kCast, node_name(in->name() + "_Cast"), {in},
                                   {fuse::UniqueName(graph, in->name() + "_float")});
    const std::vector<ir::Value*> outputs = graph.outputs();
    graph.ReplaceAllUsesWith(in, cast->output(0));
    cast->SetInput(0, in);
    for (int i = 0; i < static_cast<int>(outputs.size()); ++i) graph.SetOutput(i, outputs[i]);
    added = true;
  }
  // One Cast per fp32 value the model outputs in fp16 (an output listed twice shares it).
  absl::flat_hash_map<ir::Value*, ir::Value*> cast_of;
  for (int i = 0; i < static_cast<int>(output_types.size()); ++i) {
    ir::Value* wide = graph.outputs()[i];
    if (output_types[i] != DType::kFloat16 || wide->dtype() != DType::kFloat32) continue;
    ir::Value*& narrow = cast_of[wide];
    if (narrow == nullptr) {
      const std::string name = wide->name();
      wide->set_name(fuse::UniqueName(graph, name + "_float"));
      ir::Node* cast = graph.AddNode(OpKind::kCast, node_name(name + "_Cast"), {wide}, {name});
      cast->mutable_attrs<ir::CastAttrs>().to = DType::kFloat16;
      narrow = cast->output(0);
      added = true;
    }
    graph.SetOutput(i, narrow);
  }
  if (added) QCC_RETURN_IF_ERROR(graph.TopologicalSort());
  QCC_RETURN_IF_ERROR(ir::InferShapes(graph));
  return changed;
}

}  // namespace qcc::passes
