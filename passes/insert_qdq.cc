// InsertQdq: see passes/insert_qdq.h.
#include "passes/insert_qdq.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/shape_inference.h"
#include "passes/fuse_util.h"
#include "support/status.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

/// A float scalar or vector constant in dtype `t` (fp32 values cast to fp16 models' type).
Tensor FloatVector(const std::vector<float>& v, bool scalar, DType t) {
  Tensor out(DType::kFloat32, scalar ? Dims{} : Dims{static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.begin() + (scalar ? 1 : v.size()), out.data<float>());
  return t == DType::kFloat32 || !IsFloat(t) ? out : CastTensor(out, t);
}

class QdqWriter {
 public:
  QdqWriter(ir::Graph& graph, const QuantDecision& d, const QdqOptions& o)
      : graph_(graph), d_(d), o_(o) {}

  absl::Status Run() {
    // Weights first (they read the decision's node entries), then activations.
    std::vector<ir::Node*> weighted;
    for (const auto& n : graph_.nodes()) {
      if (d_.weights.contains(n.get())) weighted.push_back(n.get());
    }
    for (ir::Node* n : weighted) QCC_RETURN_IF_ERROR(QuantizeWeights(n));
    std::vector<ir::Value*> activations;
    for (const auto& v : graph_.values()) {
      if (d_.params.contains(v.get()) && v->constant() == nullptr && IsFloat(v->dtype())) {
        activations.push_back(v.get());
      }
    }
    for (ir::Value* v : activations) FakeQuantize(v, d_.params.at(v));
    return graph_.TopologicalSort();
  }

 private:
  std::string Fresh(absl::string_view stem) { return fuse::UniqueName(graph_, stem); }

  ir::Value* Constant(absl::string_view stem, Tensor t) {
    return graph_.NewConstant(Fresh(stem), std::move(t));
  }

  /// The zero point of `p` as the exported integer type, scalar.
  Tensor ZeroPoint(const QuantParams& p) const {
    if (o_.uint8_activations) {
      Tensor z(DType::kUInt8, {});
      z.data<uint8_t>()[0] = static_cast<uint8_t>(p.zero_point + 128);
      return z;
    }
    Tensor z(DType::kInt8, {});
    z.data<int8_t>()[0] = static_cast<int8_t>(p.zero_point);
    return z;
  }

  void FakeQuantize(ir::Value* v, const QuantParams& p) {
    const std::string stem = v->name();
    ir::Value* scale = Constant(stem + "_scale", FloatVector({p.scale}, true, v->dtype()));
    ir::Value* zp = Constant(stem + "_zero_point", ZeroPoint(p));
    ir::Node* q = graph_.AddNode(OpKind::kQuantizeLinear, Fresh(stem + "_QuantizeLinear"),
                                 {v, scale, zp}, {Fresh(stem + "_quantized")});
    ir::Node* dq = graph_.AddNode(OpKind::kDequantizeLinear, Fresh(stem + "_DequantizeLinear"),
                                  {q->output(0), scale, zp}, {Fresh(stem + "_dequantized")});
    ir::TensorType quantized = v->type();
    quantized.dtype = zp->dtype();
    q->output(0)->set_type(quantized);
    dq->output(0)->set_type(v->type());
    const bool is_output =
        std::find(graph_.outputs().begin(), graph_.outputs().end(), v) != graph_.outputs().end();
    graph_.ReplaceAllUsesWith(v, dq->output(0));
    q->SetInput(0, v);
    if (is_output) {  // the graph output keeps its name; the float tensor before Q is NAME_float
      std::string name = v->name();
      v->set_name(Fresh(name + "_float"));
      dq->output(0)->set_name(std::move(name));
    }
  }

  absl::Status QuantizeWeights(ir::Node* node) {
    const QuantizedWeights& qw = d_.weights.at(node);
    const QuantParams in = d_.params.at(node->input(0));
    const Tensor& rows = qw.weights;  // [K, ...] (Conv) or [N, K] (Gemm/MatMul)
    const int64_t k = rows.dim(0);
    const int64_t per_row = rows.numel() / std::max<int64_t>(k, 1);
    bool rows_layout = true;  // the original layout has output channels first
    if (node->kind() == OpKind::kGemm) {
      ir::GemmAttrs a = node->attrs<ir::GemmAttrs>();
      rows_layout = a.transB != 0;
      a.alpha = 1.0f;
      a.beta = 1.0f;
      node->set_attrs(a);
    } else if (node->kind() == OpKind::kMatMul) {
      rows_layout = false;
    }
    Tensor w = rows;
    if (!rows_layout) {  // [N, K] rows back to [K, N]
      w = Tensor(DType::kInt8, {per_row, k});
      for (int64_t r = 0; r < k; ++r) {
        for (int64_t c = 0; c < per_row; ++c) {
          w.data<int8_t>()[c * k + r] = rows.data<int8_t>()[r * per_row + c];
        }
      }
    }
    const DType ft = node->input(0)->dtype();
    const bool per_tensor = std::all_of(qw.weight_scales.begin(), qw.weight_scales.end(),
                                        [&](float s) { return s == qw.weight_scales.front(); });
    const std::string stem = absl::StrCat(node->name(), "_weight");
    ir::Value* wq = Constant(stem + "_quantized", w);
    ir::Value* scale = Constant(stem + "_scale", FloatVector(qw.weight_scales, per_tensor, ft));
    Tensor zeros(DType::kInt8, per_tensor ? Dims{} : Dims{k});
    std::fill(zeros.data<int8_t>(), zeros.data<int8_t>() + zeros.numel(), 0);
    ir::Value* zp = Constant(stem + "_zero_point", zeros);
    ir::Node* dq = graph_.AddNode(OpKind::kDequantizeLinear, Fresh(stem + "_DequantizeLinear"),
                                  {wq, scale, zp}, {Fresh(stem + "_dequantized")});
    dq->mutable_attrs<ir::DequantizeLinearAttrs>().axis = rows_layout ? 0 : 1;
    dq->output(0)->set_type(ir::TensorType(ft, w.dims()));
    node->SetInput(1, dq->output(0));
    if (node->input(2) == nullptr) return absl::OkStatus();
    // The plan's bias: bias_i32 + zp_in * sum(w) undoes the zero-point correction folded in.
    std::vector<float> bias(k);
    for (int64_t r = 0; r < k; ++r) {
      int64_t sum = 0;
      for (int64_t c = 0; c < per_row; ++c) sum += rows.data<int8_t>()[r * per_row + c];
      const double raw = static_cast<double>(qw.bias.data<int32_t>()[r]) +
                         static_cast<double>(in.zero_point) * static_cast<double>(sum);
      bias[r] = static_cast<float>(raw * static_cast<double>(in.scale * qw.weight_scales[r]));
    }
    node->SetInput(
        2, Constant(absl::StrCat(node->name(), "_bias_quantized"), FloatVector(bias, false, ft)));
    return absl::OkStatus();
  }

  ir::Graph& graph_;
  const QuantDecision& d_;
  const QdqOptions& o_;
};

}  // namespace

absl::Status InsertQdq(ir::Graph& graph, const QuantDecision& decision, const QdqOptions& options) {
  return QdqWriter(graph, decision, options).Run();
}

absl::StatusOr<int> WidenReducedFloats(ir::Graph& graph) {
  int changed = 0;
  for (const auto& v : graph.values()) {
    if (!IsReducedFloat(v->dtype())) continue;
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
  QCC_RETURN_IF_ERROR(ir::InferShapes(graph));
  return changed;
}

}  // namespace qcc::passes
