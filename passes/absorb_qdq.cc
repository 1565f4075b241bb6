// AbsorbQdq: see passes/absorb_qdq.h.
#include "passes/absorb_qdq.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/shape_inference.h"
#include "passes/fuse_util.h"
#include "passes/passes.h"
#include "support/status.h"

namespace qcc::passes {
namespace {

using ir::OpKind;

std::string Label(const ir::Node& n) {
  return absl::StrCat("node '", n.name(), "' (", ir::OpName(n.kind()), ")");
}

/// The scale (input 1) and zero point (input 2, may be absent) of a Q or DQ node, with its axis.
struct Params {
  Tensor scale;       // f32, scalar or 1-D
  Tensor zero_point;  // same shape, int64 values; zeros when absent
  DType zero_type = DType::kUInt8;
  int64_t axis = 1;
  bool per_tensor() const { return scale.numel() == 1; }
};

absl::StatusOr<Params> ReadParams(const ir::Node& n) {
  Params p;
  const Tensor* scale = fuse::ConstantData(n.input(1));
  if (scale == nullptr || !IsFloat(scale->dtype())) {
    return absl::InvalidArgumentError(
        absl::StrCat(Label(n),
                     ": its scale is not a float constant; qcc reads QDQ models whose "
                     "scales and zero points are initializers"));
  }
  p.scale = CastTensor(*scale, DType::kFloat32);
  p.zero_point = CastTensor(p.scale, DType::kInt64);
  std::fill(p.zero_point.data<int64_t>(), p.zero_point.data<int64_t>() + p.zero_point.numel(), 0);
  if (n.input(2) != nullptr) {
    const Tensor* zp = fuse::ConstantData(n.input(2));
    if (zp == nullptr || zp->numel() != p.scale.numel()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Label(n), ": its zero point is not a constant of the scale's shape"));
    }
    p.zero_point = CastTensor(*zp, DType::kInt64);
    p.zero_type = zp->dtype();
  } else if (n.kind() == OpKind::kQuantizeLinear) {
    const DType t = n.attrs<ir::QuantizeLinearAttrs>().output_dtype;
    if (t != DType::kUndefined) p.zero_type = t;
  }
  p.axis = n.kind() == OpKind::kQuantizeLinear ? n.attrs<ir::QuantizeLinearAttrs>().axis
                                               : n.attrs<ir::DequantizeLinearAttrs>().axis;
  return p;
}

bool SameParams(const Params& a, const Params& b) {
  if (a.scale.numel() != b.scale.numel() || a.zero_type != b.zero_type) return false;
  for (int64_t i = 0; i < a.scale.numel(); ++i) {
    if (a.scale.data<float>()[i] != b.scale.data<float>()[i] ||
        a.zero_point.data<int64_t>()[i] != b.zero_point.data<int64_t>()[i]) {
      return false;
    }
  }
  return a.per_tensor() || a.axis == b.axis;
}

/// (x - zero_point) * scale of a constant, per axis, in the scale's float type.
Tensor Dequantize(const Tensor& x, const Params& p, DType out_type) {
  Tensor y(DType::kFloat32, x.dims());
  int64_t inner = 1, channels = p.scale.numel();
  if (channels > 1) {
    const int64_t axis = p.axis < 0 ? p.axis + x.rank() : p.axis;
    for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = channels > 1 ? (i / inner) % channels : 0;
    const int64_t q = static_cast<int64_t>(x.GetAsDouble(i)) - p.zero_point.data<int64_t>()[c];
    y.data<float>()[i] = static_cast<float>(q) * p.scale.data<float>()[c];
  }
  return out_type == DType::kFloat32 ? y : CastTensor(y, out_type);
}

/// The axis of a weight tensor that indexes output channels for its use as input 1 of `node`,
/// or -1 when `node` does not take weights there.
int64_t OutputAxis(const ir::Node& node, int index) {
  if (index != 1) return -1;
  switch (node.kind()) {
    case OpKind::kConv:
      return 0;
    case OpKind::kGemm:
      return node.attrs<ir::GemmAttrs>().transB ? 0 : 1;
    case OpKind::kMatMul:
      return 1;
    default:
      return -1;
  }
}

class Absorber {
 public:
  explicit Absorber(ir::Graph& graph) : graph_(graph) {}

  absl::StatusOr<QdqImport> Run() {
    for (ir::Node* dq : fuse::NodesOfKind(graph_, {OpKind::kDequantizeLinear})) {
      if (fuse::ConstantData(dq->input(0)) != nullptr) QCC_RETURN_IF_ERROR(FoldConstant(dq));
    }
    // Data movement on quantized tensors (QOperator models slice, pad and flatten uint8 data
    // between QLinear ops) moves to float between a DQ and a Q of the same parameters.
    std::vector<ir::Node*> order;
    for (const auto& n : graph_.nodes()) order.push_back(n.get());
    for (ir::Node* n : order) QCC_RETURN_IF_ERROR(MoveToFloat(n));
    for (ir::Node* q : fuse::NodesOfKind(graph_, {OpKind::kQuantizeLinear})) {
      QCC_RETURN_IF_ERROR(RemovePair(q));
    }
    const std::vector<ir::Node*> left = fuse::NodesOfKind(graph_, {OpKind::kDequantizeLinear});
    if (!left.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          Label(*left[0]), " dequantizes '", left[0]->input(0)->name(),
          "', which is neither a constant nor the output of a QuantizeLinear; qcc reads QDQ "
          "models (Q -> DQ pairs around float ops), whose inputs are float"));
    }
    // The clean-up passes forward an Identity's (or inference Dropout's) output onto its input,
    // which then goes by the output's name: the parameters go with it.
    for (const auto& n : graph_.nodes()) {
      if (n->kind() != OpKind::kIdentity && n->kind() != OpKind::kDropout) continue;
      auto it = params_.find(n->input(0));
      if (it != params_.end()) params_[n->output(0)] = it->second;
    }
    for (const auto& [v, p] : params_) v->set_given_quant(p);
    return std::move(out_);
  }

 private:
  /// Makes `kept` stand for `replaced` (every use and graph output slot). `kept` takes the name
  /// of `replaced` when that is a graph output, and keeps its own otherwise.
  void Replace(ir::Value* replaced, ir::Value* kept) {
    const auto& outs = graph_.outputs();
    if (std::find(outs.begin(), outs.end(), replaced) != outs.end()) {
      fuse::Forward(graph_, replaced, kept);
    } else {
      graph_.ReplaceAllUsesWith(replaced, kept);
    }
  }

  absl::Status FoldConstant(ir::Node* dq) {
    QCC_ASSIGN_OR_RETURN(Params p, ReadParams(*dq));
    const Tensor& x = *fuse::ConstantData(dq->input(0));
    ir::Value* y = dq->output(0);
    ir::Value* folded = graph_.NewConstant(fuse::UniqueName(graph_, y->name() + "_folded"),
                                           Dequantize(x, p, y->dtype()));
    // Weights of a Conv/Gemm/MatMul: keep the scales when qcc's int8 weights can use them
    // (int8, zero point 0, per tensor or per output channel).
    std::string why;
    bool weights = false;
    for (const ir::Use& use : y->uses()) {
      const int64_t axis = OutputAxis(*use.node, use.index);
      if (axis < 0) continue;
      weights = true;
      const int64_t dq_axis = p.axis < 0 ? p.axis + x.rank() : p.axis;
      if (x.dtype() != DType::kInt8) {
        why = absl::StrCat(DTypeName(x.dtype()), " weights");
      } else if (std::any_of(p.zero_point.data<int64_t>(),
                             p.zero_point.data<int64_t>() + p.zero_point.numel(),
                             [](int64_t z) { return z != 0; })) {
        why = "a zero point that is not 0";
      } else if (!p.per_tensor() && dq_axis != axis) {
        why = absl::StrCat("scales on axis ", dq_axis, ", not the output-channel axis ", axis);
      }
    }
    fuse::Forward(graph_, y, folded);  // the constant takes the DQ output's name
    graph_.RemoveNode(dq);
    ++out_.folded_constants;
    if (!weights) return absl::OkStatus();
    if (why.empty()) {
      folded->set_given_weight_scales(
          std::vector<float>(p.scale.data<float>(), p.scale.data<float>() + p.scale.numel()));
      ++out_.weights;
    } else {
      out_.notes.push_back(absl::StrCat("weights '", folded->name(), "' have ", why,
                                        ": qcc quantizes them again with its own scales"));
    }
    return absl::OkStatus();
  }

  /// When `n` moves data of a QuantizeLinear's integer output: DQ -> `n` in float -> Q, with the
  /// Q's parameters (exact: these ops only pick and place elements; a Pad's constant becomes the
  /// real value it stood for).
  absl::Status MoveToFloat(ir::Node* n) {
    switch (n->kind()) {
      case OpKind::kFlatten:
      case OpKind::kReshape:
      case OpKind::kSqueeze:
      case OpKind::kUnsqueeze:
      case OpKind::kTranspose:
      case OpKind::kSlice:
      case OpKind::kPad:
      case OpKind::kMaxPool:
      case OpKind::kIdentity:
        break;
      default:
        return absl::OkStatus();
    }
    ir::Node* q = n->input(0)->producer();
    if (q == nullptr || q->kind() != OpKind::kQuantizeLinear || n->num_outputs() != 1) {
      return absl::OkStatus();
    }
    QCC_ASSIGN_OR_RETURN(Params p, ReadParams(*q));
    if (!p.per_tensor()) return absl::OkStatus();
    const DType float_type = q->input(0)->dtype();
    ir::Value* scale = q->input(1);
    ir::Value* zp = q->input(2);
    ir::Node* dq =
        graph_.AddNode(OpKind::kDequantizeLinear, n->name() + "_dq", {n->input(0), scale, zp},
                       {fuse::UniqueName(graph_, n->input(0)->name() + "_float")});
    ir::TensorType t = n->input(0)->type();
    t.dtype = float_type;
    dq->output(0)->set_type(t);
    n->SetInput(0, dq->output(0));
    if (n->kind() == OpKind::kPad) {
      const Tensor* c = n->input(2) ? fuse::ConstantData(n->input(2)) : nullptr;
      if (n->input(2) && c == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(Label(*n), ": the pad value of quantized data is not a constant"));
      }
      Tensor value(DType::kFloat32, {});
      const double level = c ? c->GetAsDouble(0) : 0.0;
      value.data<float>()[0] =
          static_cast<float>(level - static_cast<double>(p.zero_point.data<int64_t>()[0])) *
          p.scale.data<float>()[0];
      n->SetInput(2, graph_.NewConstant(fuse::UniqueName(graph_, n->name() + "_pad_value"),
                                        CastTensor(value, float_type)));
    }
    ir::Value* y = n->output(0);
    const ir::TensorType int_type = y->type();
    ir::Node* q2 = graph_.AddNode(OpKind::kQuantizeLinear, n->name() + "_q", {nullptr, scale, zp},
                                  {fuse::UniqueName(graph_, y->name() + "_quantized")});
    q2->output(0)->set_type(int_type);
    graph_.ReplaceAllUsesWith(y, q2->output(0));
    q2->SetInput(0, y);
    ir::TensorType ft = int_type;
    ft.dtype = float_type;
    y->set_type(ft);
    return absl::OkStatus();
  }

  absl::Status RemovePair(ir::Node* q) {
    QCC_ASSIGN_OR_RETURN(Params p, ReadParams(*q));
    ir::Value* x = q->input(0);
    ir::Value* qy = q->output(0);
    std::vector<ir::Node*> dqs;
    for (const ir::Use& use : qy->uses()) {
      if (use.node->kind() != OpKind::kDequantizeLinear || use.index != 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            Label(*q), ": its output is read by ", Label(*use.node),
            "; qcc reads Q -> DQ pairs (QDQ models), not integer tensors passed between ops"));
      }
      dqs.push_back(use.node);
    }
    const auto& outs = graph_.outputs();
    if (std::find(outs.begin(), outs.end(), qy) != outs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Label(*q),
                       ": its integer output is a graph output; qcc plans output "
                       "float tensors"));
    }
    bool same = true;
    for (ir::Node* dq : dqs) {
      QCC_ASSIGN_OR_RETURN(Params dp, ReadParams(*dq));
      same = same && SameParams(p, dp);
      Replace(dq->output(0), x);
      graph_.RemoveNode(dq);
    }
    graph_.RemoveNode(q);
    ++out_.pairs;
    std::string why;
    if (!same) why = "its DequantizeLinear has other parameters than its QuantizeLinear";
    if (!p.per_tensor()) why = "per-channel activation scales have no int8 form in qcc";
    if (p.zero_type != DType::kInt8 && p.zero_type != DType::kUInt8) {
      why = absl::StrCat(DTypeName(p.zero_type), " quantization has no int8 form in qcc");
    }
    if (!why.empty()) {
      out_.notes.push_back(absl::StrCat("the Q/DQ pair on '", x->name(), "' runs in float: ", why));
      return absl::OkStatus();
    }
    QuantParams qp;
    qp.scale = p.scale.data<float>()[0];
    const int64_t z = p.zero_point.data<int64_t>()[0];
    qp.zero_point = static_cast<int32_t>(p.zero_type == DType::kUInt8 ? z - 128 : z);
    out_.asymmetric = out_.asymmetric || qp.zero_point != 0;
    if (!(qp.scale > 0.0f) || !std::isfinite(qp.scale)) {
      return absl::InvalidArgumentError(
          absl::StrCat(Label(*q), ": its scale ", qp.scale, " is not a positive finite number"));
    }
    params_[x] = qp;
    return absl::OkStatus();
  }

  ir::Graph& graph_;
  QdqImport out_;
  absl::flat_hash_map<ir::Value*, QuantParams> params_;
};

class AbsorbQdqPass : public Pass {
 public:
  explicit AbsorbQdqPass(QdqImport* report) : report_(report) {}
  absl::string_view name() const override { return "absorb-qdq"; }
  absl::StatusOr<bool> Run(ir::Graph& graph) const override {
    QdqImport read;
    const bool qdq = HasQdq(graph);
    if (qdq) {
      QCC_ASSIGN_OR_RETURN(read, AbsorbQdq(graph));
    }
    if (report_ != nullptr) *report_ = std::move(read);
    return qdq;
  }

 private:
  QdqImport* report_;
};

}  // namespace

bool HasQdq(const ir::Graph& graph) {
  for (const auto& n : graph.nodes()) {
    if (n->kind() == OpKind::kQuantizeLinear || n->kind() == OpKind::kDequantizeLinear) {
      return true;
    }
  }
  return false;
}

std::unique_ptr<Pass> CreateAbsorbQdqPass(QdqImport* report) {
  return std::make_unique<AbsorbQdqPass>(report);
}

Pipeline QdqModelPipeline(QdqImport* report) {
  Pipeline p;
  p.push_back(CreateAbsorbQdqPass(report));
  for (std::unique_ptr<Pass>& pass : DefaultPipeline()) p.push_back(std::move(pass));
  return p;
}

absl::StatusOr<QdqImport> AbsorbQdq(ir::Graph& graph) {
  QCC_ASSIGN_OR_RETURN(QdqImport out, Absorber(graph).Run());
  graph.RemoveDeadValues();
  QCC_RETURN_IF_ERROR(graph.TopologicalSort());
  QCC_RETURN_IF_ERROR(ir::InferShapes(graph));
  return out;
}

}  // namespace qcc::passes
