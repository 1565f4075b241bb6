#include "passes/realize_int8.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "ir/shape_inference.h"
#include "ir/verifier.h"
#include "passes/passes.h"
#include "support/status.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

/// Copies the fused graph into the quantized one, node by node.
class Realizer {
 public:
  Realizer(const ir::Graph& graph, const QuantDecision& d) : in_(graph), d_(d) {}

  absl::StatusOr<std::unique_ptr<ir::Graph>> Run() {
    out_ = in_.EmptyLike();
    for (const ir::Value* v : in_.inputs()) plain_[v] = out_->AddInput(v->name(), v->type());
    for (const auto& node : in_.nodes()) {
      if (d_.folded_bias.contains(node.get())) continue;  // in its GEMM
      QCC_RETURN_IF_ERROR(Copy(*node));
    }
    for (const ir::Value* v : in_.outputs()) {
      QCC_ASSIGN_OR_RETURN(ir::Value * p, Plain(v));
      out_->AddOutput(p);
    }
    // As after any pass: verified, and its types are the ones shape inference gives.
    QCC_RETURN_IF_ERROR(ir::Verify(*out_));
    QCC_RETURN_IF_ERROR(ir::InferShapes(*out_));
    return std::move(out_);
  }

 private:
  absl::Status Missing(const ir::Node& node, absl::string_view what) const {
    return absl::InternalError(
        absl::StrCat("node '", node.name(), "': the int8 decision has no ", what));
  }

  /// The value `v` of the fused graph is in the quantized graph as computed (fp32, or any type a
  /// float node gives): a copy of a constant, or a Dequantize of its int8 form.
  absl::StatusOr<ir::Value*> Plain(const ir::Value* v) {
    if (auto it = plain_.find(v); it != plain_.end()) return it->second;
    if (v->constant() != nullptr) return plain_[v] = out_->NewConstant(v->name(), *v->constant());
    auto q = computed_.find(v);
    if (q == computed_.end()) {
      return absl::InternalError(
          absl::StrCat("tensor '", v->name(), "' is used before it is computed"));
    }
    ir::Node* dq = out_->AddNode(OpKind::kDequantize, absl::StrCat(v->name(), ":dequantize"),
                                 {q->second}, {v->name()});
    ir::TensorType t = v->type();
    if (!IsFloat(t.dtype)) t.dtype = DType::kFloat32;
    dq->mutable_attrs<ir::CastAttrs>().to = t.dtype;
    dq->output(0)->set_type(std::move(t));
    return plain_[v] = dq->output(0);
  }

  /// The int8 form of `v` that int8 nodes read: a Quantize of its fp32 form, also when an int8
  /// node computed it (Quantize(Dequantize(x)), which cancel-qdq removes).
  absl::StatusOr<ir::Value*> Int8(const ir::Value* v) {
    if (auto it = int8_.find(v); it != int8_.end()) return it->second;
    QCC_ASSIGN_OR_RETURN(ir::Value * x, Plain(v));
    const bool again = computed_.contains(v);
    ir::Node* q = out_->AddNode(
        OpKind::kQuantize, absl::StrCat(v->name(), again ? ":requantize" : ":quantize"), {x},
        {absl::StrCat(v->name(), kInt8Suffix, again ? ":requantized" : "")});
    QCC_RETURN_IF_ERROR(SetInt8Type(v, q->output(0)));
    return int8_[v] = q->output(0);
  }

  /// Gives `to` the int8 type of `from` and its parameters.
  absl::Status SetInt8Type(const ir::Value* from, ir::Value* to) {
    auto p = d_.params.find(from);
    if (p == d_.params.end()) {
      return absl::InternalError(
          absl::StrCat("tensor '", from->name(), "' is int8 but has no parameters"));
    }
    ir::TensorType t = from->type();
    t.dtype = DType::kInt8;
    to->set_type(std::move(t));
    to->set_quant(p->second);
    if (auto s = d_.saturation.find(from); s != d_.saturation.end()) to->set_saturation(s->second);
    return absl::OkStatus();
  }

  ir::Value* Constant(const ir::Node& node, absl::string_view suffix, const Tensor& t) {
    return out_->NewConstant(absl::StrCat(node.name(), suffix), t);
  }

  /// The int8 weights of `node` as a constant with their per-channel scales (rows: axis 0).
  ir::Value* Weights(const ir::Node& node, const QuantizedWeights& w) {
    ir::Value* c = Constant(node, ":w", w.weights);
    c->set_channel_scales({w.weight_scales, 0});
    return c;
  }

  /// Appends a node of `kind` named and attributed as `node`, whose single output stands for
  /// `result` of the fused graph: fp32 (`int8` false) or its int8 form.
  absl::Status Emit(const ir::Node& node, OpKind kind, ir::Attrs attrs,
                    std::vector<ir::Value*> inputs, const ir::Value* result, bool int8) {
    ir::Node* n =
        out_->AddNode(kind, node.name(), std::move(inputs),
                      {int8 ? absl::StrCat(result->name(), kInt8Suffix) : result->name()});
    n->set_attrs(std::move(attrs));
    if (int8) {
      QCC_RETURN_IF_ERROR(SetInt8Type(result, n->output(0)));
      computed_[result] = n->output(0);
    } else {
      n->output(0)->set_type(result->type());
      plain_[result] = n->output(0);
    }
    return absl::OkStatus();
  }

  absl::Status Copy(const ir::Node& node) {
    QCC_RETURN_IF_ERROR(CopyNode(node));
    // A graph output computed in int8 is dequantized right after it.
    for (const ir::Value* y : node.outputs()) {
      if (computed_.contains(y) && !plain_.contains(y) && IsGraphOutput(y)) {
        QCC_RETURN_IF_ERROR(Plain(y).status());
      }
    }
    return absl::OkStatus();
  }

  bool IsGraphOutput(const ir::Value* v) const {
    for (const ir::Value* o : in_.outputs()) {
      if (o == v) return true;
    }
    return false;
  }

  absl::Status CopyNode(const ir::Node& node) {
    const ir::Value* y = node.num_outputs() > 0 ? node.output(0) : nullptr;
    if (auto dyn = d_.dynamic.find(&node); dyn != d_.dynamic.end()) {
      const QuantizedWeights& w = dyn->second;
      auto bias_add = d_.dynamic_bias_add.find(&node);
      if (bias_add == d_.dynamic_bias_add.end()) return Missing(node, "bias entry");
      Tensor scales(DType::kFloat32, {static_cast<int64_t>(w.weight_scales.size())});
      std::copy(w.weight_scales.begin(), w.weight_scales.end(), scales.data<float>());
      QCC_ASSIGN_OR_RETURN(ir::Value * x, Plain(node.input(0)));
      std::vector<ir::Value*> ins = {x, Constant(node, ":w", w.weights),
                                     Constant(node, ":w_scale", scales)};
      if (w.float_bias.defined()) ins.push_back(Constant(node, ":fbias", w.float_bias));
      return Emit(node, OpKind::kDynamicQGemm, ir::NoAttrs{}, std::move(ins),
                  bias_add->second != nullptr ? bias_add->second->output(0) : y, false);
    }
    if (!d_.runs_int8(&node)) return CopyFloat(node);
    const ir::Int8Form form = ir::Int8FormOf(node.kind());
    if (form == ir::Int8Form::kMovement || node.kind() == OpKind::kAdd ||
        node.kind() == OpKind::kConcat || node.kind() == OpKind::kMaxPool ||
        node.kind() == OpKind::kAveragePool || node.kind() == OpKind::kGlobalAveragePool) {
      // The same op on int8 values: its data inputs (all of Add's and Concat's, the first of the
      // others) in int8, the rest (shapes, axes, pads) as they are.
      const bool all = node.kind() == OpKind::kAdd || node.kind() == OpKind::kConcat;
      std::vector<ir::Value*> ins;
      for (int i = 0; i < node.num_inputs(); ++i) {
        const ir::Value* v = node.input(i);
        if (v == nullptr) {
          ins.push_back(nullptr);
          continue;
        }
        QCC_ASSIGN_OR_RETURN(ir::Value * in, i == 0 || all ? Int8(v) : Plain(v));
        ins.push_back(in);
      }
      return Emit(node, node.kind(), node.attrs_variant(), std::move(ins), y, true);
    }
    if (node.kind() == OpKind::kConv || node.kind() == OpKind::kGemm ||
        node.kind() == OpKind::kMatMul) {
      auto wi = d_.weights.find(&node);
      if (wi == d_.weights.end()) return Missing(node, "weights");
      const QuantizedWeights& w = wi->second;
      QCC_ASSIGN_OR_RETURN(ir::Value * x, Int8(node.input(0)));
      // The scale form (fold-scales gives the integer one): int8 weights with their scales,
      // and the float bias.
      std::vector<ir::Value*> ins = {x, Weights(node, w)};
      auto fr = d_.float_result.find(&node);
      const bool float_result = fr != d_.float_result.end();
      if (float_result && w.real_bias.defined()) return Missing(node, "bias of an fp32 result");
      const Tensor& bias = float_result ? w.float_bias : w.real_bias;
      if (bias.defined()) ins.push_back(Constant(node, ":fbias", bias));
      if (node.kind() == OpKind::kConv) {
        return Emit(node, OpKind::kQConv, node.attrs_variant(), std::move(ins), y, true);
      }
      ir::QGemmAttrs a;
      if (node.kind() == OpKind::kGemm) {
        const auto& g = node.attrs<ir::GemmAttrs>();
        a.activation = g.activation;
        a.activation_alpha = g.activation_alpha;
        a.activation_min = g.activation_min;
        a.activation_max = g.activation_max;
      }
      a.float_result = float_result ? 1 : 0;
      const ir::Value* result = float_result && fr->second != nullptr ? fr->second->output(0) : y;
      return Emit(node, OpKind::kQGemm, a, std::move(ins), result, !float_result);
    }
    auto lut = d_.luts.find(&node);
    if (lut == d_.luts.end()) return Missing(node, "int8 form for its op");
    QCC_ASSIGN_OR_RETURN(ir::Value * x, Int8(node.input(0)));
    const UnaryCall& call = lut->second.call;
    return Emit(node, OpKind::kQLut, ir::QLutAttrs{call.fn, call.alpha, call.beta, call.gamma},
                {x, Constant(node, ":lut",
                             Tensor::FromVector<int8_t>(DType::kInt8, {256}, lut->second.table))},
                y, true);
  }

  absl::Status CopyFloat(const ir::Node& node) {
    // Shape and Size read only dims, which the int8 form has too.
    const bool dims_only = node.kind() == OpKind::kShape || node.kind() == OpKind::kSize;
    std::vector<ir::Value*> ins;
    for (const ir::Value* v : node.inputs()) {
      if (v == nullptr) {
        ins.push_back(nullptr);
      } else if (auto q = computed_.find(v);
                 dims_only && q != computed_.end() && !plain_.contains(v)) {
        ins.push_back(q->second);
      } else {
        QCC_ASSIGN_OR_RETURN(ir::Value * in, Plain(v));
        ins.push_back(in);
      }
    }
    std::vector<std::string> names;
    for (const ir::Value* y : node.outputs()) names.push_back(y->name());
    ir::Node* n = out_->AddNode(node.kind(), node.name(), std::move(ins), names);
    n->set_attrs(node.attrs_variant());
    if (node.kind() == OpKind::kAttention && d_.int8_attention.contains(&node)) {
      n->mutable_attrs<ir::AttentionAttrs>().qcc_int8 = 1;
    }
    for (int i = 0; i < node.num_outputs(); ++i) {
      n->output(i)->set_type(node.output(i)->type());
      if (const Tensor* c = node.output(i)->constant()) n->output(i)->set_constant(*c);
      plain_[node.output(i)] = n->output(i);
    }
    return absl::OkStatus();
  }

  const ir::Graph& in_;
  const QuantDecision& d_;
  std::unique_ptr<ir::Graph> out_;
  /// The fused graph's values in the quantized graph: in float, as an int8 node computed them,
  /// and as int8 nodes read them.
  absl::flat_hash_map<const ir::Value*, ir::Value*> plain_, computed_, int8_;
};

class AssignPrecisionPass : public Pass {
 public:
  AssignPrecisionPass(PrecisionSetup setup, PrecisionReport* report)
      : setup_(std::move(setup)), report_(report) {}

  absl::string_view name() const override { return "assign-precision"; }

  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    QCC_ASSIGN_OR_RETURN(const QuantDecision decision,
                         setup_.dynamic ? AssignDynamic(graph, setup_.options)
                                        : AssignPrecision(graph, setup_.ranges, setup_.options));
    if (report_ != nullptr) *report_ = ReportDecision(graph, decision);
    QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> quantized, Realizer(graph, decision).Run());
    graph = std::move(*quantized);
    return true;
  }

 private:
  PrecisionSetup setup_;
  PrecisionReport* report_;
};

}  // namespace

std::string FloatTensorName(const ir::Value& int8_value) {
  absl::string_view name = int8_value.name();
  if (absl::EndsWith(name, kInt8Suffix)) name.remove_suffix(kInt8Suffix.size());
  return std::string(name);
}

Pipeline Int8Pipeline(QuantizedForm form) {
  Pipeline p;
  p.push_back(CreateCancelQdqPass());
  p.push_back(CreateEliminateDeadCodePass());
  if (form == QuantizedForm::kInteger) p.push_back(CreateFoldScalesPass());
  return p;
}

std::unique_ptr<Pass> CreateAssignPrecisionPass(PrecisionSetup setup, PrecisionReport* report) {
  return std::make_unique<AssignPrecisionPass>(std::move(setup), report);
}

Pipeline QuantizePipeline(PrecisionSetup setup, PrecisionReport* report, QuantizedForm form) {
  Pipeline p;
  p.push_back(CreateAssignPrecisionPass(std::move(setup), report));
  for (std::unique_ptr<Pass>& pass : Int8Pipeline(form)) p.push_back(std::move(pass));
  return p;
}

absl::StatusOr<std::unique_ptr<ir::Graph>> RealizeInt8(const ir::Graph& graph,
                                                       const QuantDecision& decision,
                                                       std::vector<PassRecord>* records,
                                                       QuantizedForm form) {
  QCC_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> quantized, Realizer(graph, decision).Run());
  PassRecord realized = RecordRewrite("realize-int8", graph, *quantized);
  QCC_ASSIGN_OR_RETURN(std::vector<PassRecord> passes, RunPipeline(*quantized, Int8Pipeline(form)));
  if (records != nullptr) {
    records->push_back(std::move(realized));
    records->insert(records->end(), passes.begin(), passes.end());
  }
  return quantized;
}

}  // namespace qcc::passes
