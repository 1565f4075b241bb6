#include "ir/verifier.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "support/status.h"

namespace qcc::ir {

namespace {

absl::Status NodeError(const Node& n, absl::string_view what) {
  return absl::InternalError(
      absl::StrCat("verifier: node '", n.name(), "' (", OpName(n.kind()), "): ", what));
}

/// The activation fused into `n` (kNone for ops that cannot carry one).
Activation FusedActivation(const Node& n) {
  switch (n.kind()) {
    case OpKind::kConv:
      return n.attrs<ConvAttrs>().activation;
    case OpKind::kGemm:
      return n.attrs<GemmAttrs>().activation;
    case OpKind::kAdd:
      return n.attrs<AddAttrs>().activation;
    case OpKind::kQConv:
      return n.attrs<ConvAttrs>().activation;
    case OpKind::kQGemm:
      return n.attrs<QGemmAttrs>().activation;
    default:
      return Activation::kNone;
  }
}

/// `v` is an int8 tensor with usable quantization parameters.
bool IsQuantizedInt8(const Value* v) {
  return v != nullptr && v->dtype() == DType::kInt8 && v->quant() != nullptr &&
         std::isfinite(v->quant()->scale) && v->quant()->scale > 0.0f;
}

/// A QConv's or QGemm's operands 1 to 3: int8 weights with one scale per output channel (their
/// first extent, K), an int32 bias [K] and fp32 multipliers [K], all constants.
absl::Status VerifyQuantizedWeights(const Node& n) {
  const Value* w = n.input(1);
  const ChannelScales* scales = w->channel_scales();
  if (w->constant() == nullptr || w->dtype() != DType::kInt8 || scales == nullptr ||
      scales->axis != 0 || !w->type().has_rank() || w->type().rank() < 1 ||
      static_cast<int64_t>(scales->scales.size()) != (*w->type().dims)[0]) {
    return NodeError(n, absl::StrCat("weights '", w->name(),
                                     "' must be an int8 constant with one scale per output "
                                     "channel (axis 0)"));
  }
  const int64_t k = (*w->type().dims)[0];
  // The scale form (passes/fold_scales.cc): at most an fp32 bias; the integer form: an int32
  // bias and fp32 multipliers (and a float_result QGemm's optional fp32 bias after them).
  const bool scale_form = n.num_inputs() <= 3;
  const std::vector<int> operands = scale_form ? std::vector<int>{2} : std::vector<int>{2, 3, 4};
  for (int i : operands) {
    if (i >= n.num_inputs()) continue;
    const Value* c = n.input(i);
    const bool required = !scale_form && i < 4;
    if (c == nullptr && !required) continue;
    const DType want = i == 2 && !scale_form ? DType::kInt32 : DType::kFloat32;
    if (c == nullptr || c->constant() == nullptr || c->dtype() != want ||
        c->constant()->numel() != k) {
      return NodeError(
          n, absl::StrCat(i == 3 ? "multipliers '" : "bias '", c != nullptr ? c->name() : "(none)",
                          "' must be a ", DTypeName(want), " constant of ", k, " elements"));
    }
  }
  return absl::OkStatus();
}

/// The quantized graph's rules (passes/realize_int8.h): an int8 tensor that carries parameters
/// has a finite scale > 0; Quantize takes a float tensor to such an int8 one and Dequantize the
/// reverse; the int8 kernels read (and QConv, QLut and int8 QGemm write) such tensors.
absl::Status VerifyQuantized(const Node& n) {
  for (const Value* v : n.outputs()) {
    if (v->quant() != nullptr && !IsQuantizedInt8(v)) {
      return NodeError(n, absl::StrCat("output '", v->name(),
                                       "' has quantization parameters but is not int8 with a "
                                       "finite scale > 0"));
    }
  }
  auto need = [&](const Value* v, absl::string_view what) -> absl::Status {
    if (IsQuantizedInt8(v)) return absl::OkStatus();
    return NodeError(n, absl::StrCat(what, " '", v != nullptr ? v->name() : "(none)",
                                     "' must be int8 with quantization parameters"));
  };
  switch (n.kind()) {
    case OpKind::kQuantize:
      if (!IsFloat(n.input(0)->dtype())) return NodeError(n, "its input must be a float tensor");
      return need(n.output(0), "output");
    case OpKind::kDequantize:
      if (!IsFloat(n.output(0)->dtype())) return NodeError(n, "its output must be a float tensor");
      return need(n.input(0), "input");
    case OpKind::kQLut:
      QCC_RETURN_IF_ERROR(need(n.input(0), "input"));
      return need(n.output(0), "output");
    case OpKind::kQConv:
    case OpKind::kQGemm:
      QCC_RETURN_IF_ERROR(need(n.input(0), "input"));
      QCC_RETURN_IF_ERROR(VerifyQuantizedWeights(n));
      if (n.kind() == OpKind::kQGemm && n.attrs<QGemmAttrs>().float_result) {
        return absl::OkStatus();
      }
      return need(n.output(0), "output");
    default:
      return absl::OkStatus();
  }
}

}  // namespace

absl::Status Verify(const Graph& graph) {
  absl::flat_hash_set<absl::string_view> names;
  absl::flat_hash_set<const Value*> defined;
  for (const auto& v : graph.values()) {
    if (!names.insert(v->name()).second) {
      return absl::InternalError(
          absl::StrCat("verifier: value name '", v->name(), "' is used twice"));
    }
    if (v->constant() != nullptr || v->is_graph_input()) defined.insert(v.get());
    // What a QDQ model gives (absorb-qdq): a grid for a float tensor (or one whose type a pass
    // has not inferred yet), scales for float weights.
    if (const QuantParams* q = v->given_quant();
        q != nullptr && ((!IsFloat(v->dtype()) && v->dtype() != DType::kUndefined) ||
                         !std::isfinite(q->scale) || q->scale <= 0.0f)) {
      return absl::InternalError(absl::StrCat("verifier: '", v->name(),
                                              "' has given int8 parameters but is not a float "
                                              "tensor with a finite scale > 0"));
    }
    if (v->given_weight_scales() != nullptr && (v->constant() == nullptr || !IsFloat(v->dtype()))) {
      return absl::InternalError(absl::StrCat(
          "verifier: '", v->name(), "' has given weight scales but is not a float constant"));
    }
  }
  for (const auto& n : graph.nodes()) {
    const OpInfo& info = GetOpInfo(n->kind());
    if (n->num_inputs() < info.min_inputs ||
        (info.max_inputs >= 0 && n->num_inputs() > info.max_inputs)) {
      return NodeError(*n, absl::StrCat("has ", n->num_inputs(), " inputs, the op takes ",
                                        info.min_inputs, " to ", info.max_inputs));
    }
    if (n->num_outputs() < info.min_outputs ||
        (info.max_outputs >= 0 && n->num_outputs() > info.max_outputs)) {
      return NodeError(*n, absl::StrCat("has ", n->num_outputs(), " outputs, the op gives ",
                                        info.min_outputs, " to ", info.max_outputs));
    }
    if (n->attrs_variant().index() != DefaultAttrs(n->kind()).index()) {
      return NodeError(*n, "holds attributes of another op kind");
    }
    // Fused activations are defined on float data, and on quantized int8 data (a clamp on the
    // output's grid).
    const Value* out = n->num_outputs() > 0 ? n->output(0) : nullptr;
    const DType out_type = out != nullptr ? out->dtype() : DType::kUndefined;
    if (FusedActivation(*n) != Activation::kNone && out_type != DType::kUndefined &&
        !IsFloat(out_type) && out->quant() == nullptr) {
      return NodeError(*n, absl::StrCat("has a fused activation on ", DTypeName(out_type),
                                        " data; fused activations need a float output"));
    }
    QCC_RETURN_IF_ERROR(VerifyQuantized(*n));
    for (int i = 0; i < n->num_inputs(); ++i) {
      const Value* v = n->input(i);
      if (v == nullptr) continue;
      if (!defined.contains(v)) {
        return NodeError(
            *n, absl::StrCat("input ", i, " '", v->name(), "' is not defined before this node"));
      }
      const auto& uses = v->uses();
      if (std::find(uses.begin(), uses.end(), Use{n.get(), i}) == uses.end()) {
        return NodeError(*n, absl::StrCat("input '", v->name(), "' does not list this use"));
      }
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      const Value* v = n->output(i);
      if (v->producer() != n.get() || v->producer_output() != i) {
        return NodeError(*n, absl::StrCat("output '", v->name(), "' names another producer"));
      }
      defined.insert(v);
    }
  }
  for (const Value* v : graph.outputs()) {
    if (!defined.contains(v)) {
      return absl::InternalError(
          absl::StrCat("verifier: graph output '", v->name(), "' is never defined"));
    }
  }
  return absl::OkStatus();
}

}  // namespace qcc::ir
