#include "ir/shape_inference.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "ir/shape_fns.h"
#include "support/memory.h"
#include "support/status.h"

namespace qcc::ir {

absl::Status InferContext::Error(absl::string_view message) const {
  return absl::InvalidArgumentError(
      absl::StrCat("node '", node.name(), "' (", OpName(node.kind()), "): ", message));
}

ShapeFn GetShapeFn(OpKind kind) {
  static constexpr ShapeFn kFns[] = {
#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out, int8, unary) &shape_fn,
#include "ir/ops.def"
#undef OP
  };
  return kFns[static_cast<int>(kind)];
}

absl::StatusOr<std::vector<TensorType>> InferNode(const Node& node, std::vector<TensorType> inputs,
                                                  std::vector<const Tensor*> values,
                                                  std::vector<const SymbolicValue*> symbolic) {
  InferContext ctx{node, std::move(inputs), std::move(values), {}, std::move(symbolic)};
  ctx.outputs.resize(node.num_outputs());
  QCC_RETURN_IF_ERROR(GetShapeFn(node.kind())(ctx));
  // A shape no tensor can have: its size would overflow (Reshape/Expand/ConstantOfShape to
  // [2^40, 2^40] in a hostile model).
  for (size_t i = 0; i < ctx.outputs.size(); ++i) {
    const TensorType& t = ctx.outputs[i];
    if (t.IsStatic() && !DenseBytes(DType::kInt8, t.StaticDims())) {
      return ctx.Error(absl::StrCat("output ", i, " would have shape ",
                                    DimsToString(t.StaticDims()),
                                    ", more than 2^62 elements: no tensor can be that large"));
    }
  }
  return std::move(ctx.outputs);
}

namespace {

/// Merges a declared type into an inferred one: declared named symbols and known extents win
/// where inference did not know them; a conflict between two known extents is an error.
absl::StatusOr<TensorType> MergeDeclared(const Node& node, const Value& v,
                                         const TensorType& inferred) {
  const TensorType& declared = v.type();
  TensorType out = inferred;
  if (out.dtype == DType::kUndefined) out.dtype = declared.dtype;
  if (!declared.has_rank()) return out;
  if (!out.has_rank()) {
    out.dims = declared.dims;
    return out;
  }
  if (out.rank() != declared.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", node.name(), "' (", OpName(node.kind()), "): output '", v.name(),
        "' is declared with rank ", declared.rank(), " but its inputs give rank ", out.rank()));
  }
  for (int64_t i = 0; i < out.rank(); ++i) {
    Dim& d = (*out.dims)[i];
    const Dim dd = (*declared.dims)[i];
    if (IsKnown(d) && IsKnown(dd) && d != dd) {
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", node.name(), "' (", OpName(node.kind()), "): output '", v.name(),
          "' is declared with extent ", dd, " on axis ", i, " but its inputs give ", d));
    }
    if (!IsKnown(d) && dd != kUnknownDim) d = dd;
  }
  return out;
}

}  // namespace

absl::Status InferShapes(Graph& graph, SymbolicValues* symbolic) {
  // Outputs of Constant nodes are known values too, so shape-like inputs written as Constant
  // nodes (exporters do this) still give exact shapes before any folding.
  absl::flat_hash_map<const Value*, const Tensor*> known;
  auto value_of = [&](const Value* v) -> const Tensor* {
    if (v == nullptr) return nullptr;
    if (v->constant() != nullptr) return v->constant();
    auto it = known.find(v);
    return it == known.end() ? nullptr : it->second;
  };
  // Symbolic values of shape arithmetic (Shape of a batch-N tensor and what is computed from it).
  SymbolicValues local;
  SymbolicValues& sym = symbolic != nullptr ? *symbolic : local;
  sym = ConstantSymbolicValues(graph);
  for (const auto& n : graph.nodes()) {
    std::vector<TensorType> in_types;
    std::vector<const Tensor*> values;
    std::vector<const SymbolicValue*> sym_in;
    for (Value* v : n->inputs()) {
      in_types.push_back(v ? v->type() : TensorType());
      values.push_back(value_of(v));
      auto it = v ? sym.find(v) : sym.end();
      sym_in.push_back(it == sym.end() ? nullptr : &it->second);
    }
    if (n->kind() == OpKind::kConstant) known[n->output(0)] = &n->attrs<ConstantAttrs>().value;
    QCC_ASSIGN_OR_RETURN(std::vector<TensorType> out_types,
                         InferNode(*n, in_types, std::move(values), sym_in));
    for (int i = 0; i < n->num_outputs(); ++i) {
      QCC_ASSIGN_OR_RETURN(TensorType merged, MergeDeclared(*n, *n->output(i), out_types[i]));
      n->output(i)->set_type(std::move(merged));
      out_types[i] = n->output(i)->type();
    }
    std::vector<std::optional<SymbolicValue>> results =
        InferSymbolic(*n, in_types, sym_in, out_types);
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i]) sym[n->output(static_cast<int>(i))] = *std::move(results[i]);
    }
  }
  return absl::OkStatus();
}

}  // namespace qcc::ir
