#include "ir/verifier.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

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
    default:
      return Activation::kNone;
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
    // Fused activations are defined on float data only.
    const DType out_type = n->num_outputs() > 0 ? n->output(0)->dtype() : DType::kUndefined;
    if (FusedActivation(*n) != Activation::kNone && out_type != DType::kUndefined &&
        !IsFloat(out_type)) {
      return NodeError(*n, absl::StrCat("has a fused activation on ", DTypeName(out_type),
                                        " data; fused activations need a float output"));
    }
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
