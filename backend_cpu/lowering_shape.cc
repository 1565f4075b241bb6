// The lowering of shape arithmetic (backend_cpu/lowering_internal.h): values known at compile
// time as affine functions of the batch, the Resize parameters of computed sizes, and the check
// that every extent a step produces is known.
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "backend_cpu/lowering_internal.h"
#include "backend_cpu/ops/movement_ops.h"
#include "ir/shape_fns/movement_params.h"
#include "passes/fuse_util.h"

namespace qcc::cpu::lowering_internal {

std::optional<runtime::BatchAffineStepParams> Lowering::BatchAffineOf(const ir::Value* v) const {
  auto it = symbolic_.find(v);
  if (it == symbolic_.end() || !v->type().IsStatic()) return std::nullopt;
  runtime::BatchAffineStepParams p;
  for (const std::optional<ir::SymInt>& e : it->second) {
    if (!e) return std::nullopt;
    int64_t coef = 0;
    for (const auto& [symbol, c] : e->terms()) {
      if (!ir::IsSymbol(batch_symbol_) || symbol != ir::SymbolIndex(batch_symbol_)) {
        return std::nullopt;  // another symbol: not something the plan's batch determines
      }
      coef = c;
    }
    p.offsets.push_back(e->constant());
    p.coefs.push_back(coef);
  }
  return p;
}

bool Lowering::KnownAtCompileTime(const ir::Node& node) const {
  if (node.num_outputs() == 0) return false;
  for (const ir::Value* v : node.outputs()) {
    if (!BatchAffineOf(v)) return false;
  }
  return true;
}

void Lowering::EmitBatchAffine(const ir::Value* v, int32_t out, const ir::Node& user) {
  Emit(StepKind::kBatchAffine, user, {}, out, WithParams(*BatchAffineOf(v)));
}

namespace {

/// The input of `node` that its output extents come from (a non-constant integer tensor whose
/// value is not known), traced back to the node that computes it from tensor data; nullptr when
/// none.
const ir::Node* DataDependentSource(const ir::Node& node, const ir::SymbolicValues& symbolic,
                                    const ir::Value** value) {
  auto unknown_integer = [&](const ir::Value* v) {
    if (v == nullptr || IsFloat(v->dtype()) || passes::fuse::ConstantData(v) != nullptr) {
      return false;
    }
    auto it = symbolic.find(v);
    if (it == symbolic.end()) return true;
    for (const auto& e : it->second) {
      if (!e) return true;
    }
    return false;
  };
  const ir::Value* v = nullptr;
  for (const ir::Value* in : node.inputs()) {
    if (unknown_integer(in)) {
      v = in;
      break;
    }
  }
  *value = v;
  const ir::Node* source = v ? v->producer() : nullptr;
  for (int depth = 0; source != nullptr && depth < 64; ++depth) {
    const ir::Value* up = nullptr;
    for (const ir::Value* in : source->inputs()) {
      if (unknown_integer(in)) up = in;
    }
    if (up == nullptr || up->producer() == nullptr) break;
    source = up->producer();
  }
  return source;
}

}  // namespace

absl::Status Lowering::CheckExtentsKnown() const {
  absl::flat_hash_set<const ir::Value*> outputs(graph_.outputs().begin(), graph_.outputs().end());
  for (const auto& owned : graph_.nodes()) {
    const ir::Node& node = *owned;
    if (node.kind() == OpKind::kConstant || node.kind() == OpKind::kObserve ||
        KnownAtCompileTime(node)) {
      continue;
    }
    for (const ir::Value* out : node.outputs()) {
      if (out->uses().empty() && !outputs.contains(out)) continue;
      absl::StatusOr<std::vector<int64_t>> dims = PlanDims(*out);
      if (dims.ok()) continue;
      int64_t axis = 0;
      if (out->type().has_rank()) {
        const auto& d = *out->type().dims;
        while (axis < static_cast<int64_t>(d.size()) &&
               (ir::IsKnown(d[axis]) || (axis == 0 && ir::IsSymbol(d[axis])))) {
          ++axis;
        }
      }
      const std::string what = out->type().has_rank()
                                   ? absl::StrCat("extent ", axis, " of '", out->name(), "'")
                                   : absl::StrCat("the rank of '", out->name(), "'");
      const std::string where =
          absl::StrCat("node '", node.name(), "' (", ir::OpName(node.kind()), "): ");
      const ir::Value* from = nullptr;
      if (const ir::Node* source = DataDependentSource(node, symbolic_, &from)) {
        const std::string via =
            source == from->producer() ? "" : absl::StrCat(" (through '", from->name(), "')");
        return absl::InvalidArgumentError(absl::StrCat(
            where, what, " is not known when compiling: it depends on '", source->output(0)->name(),
            "'", via, ", which node '", source->name(), "' (", ir::OpName(source->kind()),
            ") computes from tensor data at run time; a plan needs every extent but the batch "
            "at compile time, so a data-dependent shape cannot be compiled"));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          where, what,
          " is not known when compiling; a plan needs every extent but the batch at compile "
          "time: fix the model's dynamic input extents with qcc compile --shape NAME=N,D1,... "
          "(e.g. x=N,3,224,224)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<runtime::ResizeStepParams> Lowering::ResizeParams(const ir::Node& node) const {
  const auto& attrs = node.attrs<ir::ResizeAttrs>();
  const ir::Value* x = node.input(0);
  const std::string where = absl::StrCat("node '", node.name(), "' (Resize): ");
  if (attrs.antialias != 0) {
    return absl::UnimplementedError(where + "antialiased Resize cannot be put in a plan yet");
  }
  auto constant = [&](int i) -> const Tensor* {
    return node.input(i) ? passes::fuse::ConstantData(node.input(i)) : nullptr;
  };
  const Tensor* roi = constant(1);
  const Tensor* scales = constant(2);
  std::vector<ir::Dim> sizes;
  if (node.input(3) != nullptr) {
    // Sizes as extents: a constant, or shape arithmetic known symbolically (the batch kept).
    if (const Tensor* t = constant(3)) {
      for (int64_t v : t->ToInt64Vector()) sizes.push_back(v);
    } else if (auto it = symbolic_.find(node.input(3)); it != symbolic_.end()) {
      for (const auto& e : it->second) sizes.push_back(e ? e->AsDim() : ir::kUnknownDim);
    } else {
      return absl::UnimplementedError(where + "its sizes are not known at compile time");
    }
  }
  if ((node.input(1) != nullptr && roi == nullptr) ||
      (node.input(2) != nullptr && scales == nullptr)) {
    return absl::UnimplementedError(where + "its roi or scales are not known at compile time");
  }
  QCC_ASSIGN_OR_RETURN(ir::ResizeParams params,
                       ir::ResolveResize(*x->type().dims, attrs, roi, scales, sizes));
  const std::vector<ResizeAxisParams> axes = ResizeAxes(attrs, params);
  const size_t rank = axes.size();
  runtime::ResizeStepParams p;
  p.coord = static_cast<int64_t>(axes[0].coord);
  p.filter = static_cast<int64_t>(axes[0].filter);
  p.rounding = static_cast<int64_t>(axes[0].rounding);
  p.exclude_outside = axes[0].exclude_outside ? 1 : 0;
  p.cubic_a = static_cast<float>(axes[0].cubic_a);
  p.extrapolation_value = attrs.extrapolation_value;
  p.roi.resize(2 * rank);
  for (size_t k = 0; k < rank; ++k) {
    p.scales.push_back(axes[k].scale);
    p.roi[k] = axes[k].roi_start;
    p.roi[rank + k] = axes[k].roi_end;
  }
  // The batch is carried through: a scale of 1 over the whole axis.
  const ir::Dim in0 = (*x->type().dims)[0], out0 = (*node.output(0)->type().dims)[0];
  if (p.scales[0] != 1.0 || in0 != out0 ||
      (axes[0].coord == ResizeCoordMode::kTfCropAndResize && (p.roi[0] != 0 || p.roi[rank] != 1))) {
    return absl::UnimplementedError(where + "a Resize of the batch axis cannot be put in a plan");
  }
  return p;
}

}  // namespace qcc::cpu::lowering_internal
