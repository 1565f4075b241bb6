// Opset differences: every older attribute form is rewritten here into the newest-opset form
// that ops.def declares, so nothing past the importer knows which opset a model came from.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "frontend/internal/node_import.h"
#include "ir/op_kind.h"
#include "support/status.h"

namespace qcc::frontend::internal {

namespace {

using ir::OpKind;

bool IsUpsample(const NodeImport& n) { return n.proto.op_type() == "Upsample"; }

/// The opset from which a reduction takes `axes` as an input instead of an attribute.
int ReduceAxesInputOpset(OpKind kind) { return kind == OpKind::kReduceSum ? 13 : 18; }

bool IsReduction(OpKind kind) {
  switch (kind) {
    case OpKind::kReduceMean:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kReduceProd:
    case OpKind::kReduceL1:
    case OpKind::kReduceL2:
    case OpKind::kReduceLogSum:
    case OpKind::kReduceLogSumExp:
    case OpKind::kReduceSumSquare:
      return true;
    default:
      return false;
  }
}

Tensor Int64s(const std::vector<int64_t>& v) {
  return Tensor::FromVector(DType::kInt64, {static_cast<int64_t>(v.size())}, v);
}

/// Constant's value_float / value_floats / value_int / value_ints forms (opset 12+).
absl::Status ReadConstantValue(const NodeImport& n, ir::ConstantAttrs& a) {
  for (const char* unsupported : {"sparse_value", "value_string", "value_strings"}) {
    if (FindAttr(n.proto, unsupported) != nullptr) {
      return n.Error(absl::StatusCode::kUnimplemented,
                     absl::StrCat("attribute '", unsupported,
                                  "' is not supported (qcc holds dense numeric tensors only)"));
    }
  }
  if (a.value.defined()) return absl::OkStatus();
  QCC_ASSIGN_OR_RETURN(auto f, GetFloatAttr(n, "value_float"));
  QCC_ASSIGN_OR_RETURN(auto fs, GetFloatsAttr(n, "value_floats"));
  QCC_ASSIGN_OR_RETURN(auto i, GetIntAttr(n, "value_int"));
  QCC_ASSIGN_OR_RETURN(auto is, GetIntsAttr(n, "value_ints"));
  if (f) {
    a.value = Tensor::FromVector(DType::kFloat32, {}, std::vector<float>{*f});
  } else if (fs) {
    a.value = Tensor::FromVector(DType::kFloat32, {static_cast<int64_t>(fs->size())}, *fs);
  } else if (i) {
    a.value = Tensor::FromVector(DType::kInt64, {}, std::vector<int64_t>{*i});
  } else if (is) {
    a.value = Int64s(*is);
  } else {
    return n.Error(absl::StatusCode::kInvalidArgument,
                   "has no value (one of the attributes value, value_float, value_floats, "
                   "value_int, value_ints is required)");
  }
  return absl::OkStatus();
}

/// Upsample (opset 7 to 9): Resize with asymmetric coordinates and floor rounding.
absl::Status ReadUpsampleAttrs(const NodeImport& n, ir::ResizeAttrs& a) {
  QCC_ASSIGN_OR_RETURN(auto mode, GetStringAttr(n, "mode"));
  if (!mode || *mode == "nearest") {
    a.mode = ir::ResizeMode::kNearest;
  } else if (*mode == "linear" || *mode == "bilinear") {
    a.mode = ir::ResizeMode::kLinear;
  } else {
    return n.Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat("attribute 'mode' is '", *mode,
                                "'; allowed values: nearest, linear, bilinear"));
  }
  return absl::OkStatus();
}

/// True when `v` is an empty tensor: an initializer or a Constant node with no elements.
bool IsEmptyTensor(const ir::Value* v) {
  if (v == nullptr) return false;
  if (v->constant() != nullptr) return v->constant()->numel() == 0;
  const ir::Node* p = v->producer();
  return p != nullptr && p->kind() == OpKind::kConstant &&
         p->attrs<ir::ConstantAttrs>().value.numel() == 0;
}

/// Moves input `from` to slot `to`, leaving `from` omitted.
void MoveInput(ir::Node* node, int from, int to) {
  ir::Value* v = node->input(from);
  node->SetInput(from, nullptr);
  node->SetInput(to, v);
}

/// Sets input `slot` to a constant made from the INTS attribute `name`; `required` says whether
/// the attribute must be present.
absl::Status IntsAttrToInput(NodeImport& n, absl::string_view name, int slot, bool required) {
  QCC_ASSIGN_OR_RETURN(auto v, GetIntsAttr(n, name));
  if (!v) {
    if (!required) return absl::OkStatus();
    return n.Error(absl::StatusCode::kInvalidArgument,
                   absl::StrCat("attribute '", name, "' is required in this opset"));
  }
  n.node->SetInput(slot, n.AddConstant(name, Int64s(*v)));
  return absl::OkStatus();
}

/// Sets input `slot` to an fp32 scalar from the FLOAT attribute `name`, when present; it takes
/// the data input's element type once that is known.
absl::Status FloatAttrToInput(NodeImport& n, absl::string_view name, int slot) {
  QCC_ASSIGN_OR_RETURN(auto v, GetFloatAttr(n, name));
  if (!v) return absl::OkStatus();
  ir::Value* c =
      n.AddConstant(name, Tensor::FromVector(DType::kFloat32, {}, std::vector<float>{*v}));
  n.node->SetInput(slot, c);
  n.fixups.push_back({c, n.node->input(0)});
  return absl::OkStatus();
}

absl::Status CanonicalizeResize(NodeImport& n) {
  ir::Node* node = n.node;
  if (IsUpsample(n) && n.opset < 9) {
    QCC_ASSIGN_OR_RETURN(auto scales, GetFloatsAttr(n, "scales"));
    if (!scales) {
      return n.Error(absl::StatusCode::kInvalidArgument, "attribute 'scales' is required");
    }
    node->SetInput(
        2, n.AddConstant("scales",
                         Tensor::FromVector(DType::kFloat32, {static_cast<int64_t>(scales->size())},
                                            *scales)));
    return absl::OkStatus();
  }
  if (IsUpsample(n) || n.opset < 11) {  // (X, scales) -> (X, roi, scales)
    if (node->num_inputs() != 2) {
      return n.Error(absl::StatusCode::kInvalidArgument,
                     absl::StrCat("has ", node->num_inputs(), " inputs, expected 2 (X, scales)"));
    }
    MoveInput(node, 1, 2);
    return absl::OkStatus();
  }
  // Opset 11 and 12 require roi and scales even when unused and pass them as empty tensors; roi
  // only matters for tf_crop_and_resize.
  const auto& attrs = node->attrs<ir::ResizeAttrs>();
  if (node->input(1) != nullptr &&
      (IsEmptyTensor(node->input(1)) ||
       attrs.coordinate_transformation_mode != ir::CoordTransform::kTfCropAndResize)) {
    node->SetInput(1, nullptr);
  }
  if (IsEmptyTensor(node->input(2))) node->SetInput(2, nullptr);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OpKind> ResolveOpKind(const NodeImport& n) {
  if (IsUpsample(n)) return OpKind::kResize;
  std::optional<OpKind> kind = ir::OpKindFromName(n.proto.op_type());
  // qcc's own ops (qcc.Observe, qcc.Attention) are made by passes, never read from a model.
  if (!kind || absl::StartsWith(n.proto.op_type(), "qcc.")) {
    return absl::UnimplementedError(absl::StrCat(n.Label(), ": op '", n.proto.op_type(),
                                                 "' (opset ", n.opset, ") is not supported"));
  }
  return *kind;
}

absl::Status ReadNodeAttrs(const NodeImport& n, OpKind kind, ir::Attrs& attrs) {
  // Defaults of older opsets, set before the model's own attributes override them.
  switch (kind) {
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax:
    case OpKind::kHardmax:
      if (n.opset < 13) {
        auto& a = std::get<ir::SoftmaxAttrs>(attrs);
        a.axis = 1;
        a.coerce_2d = 1;
      }
      break;
    case OpKind::kResize:
      if (IsUpsample(n) || n.opset < 11) {
        auto& a = std::get<ir::ResizeAttrs>(attrs);
        a.coordinate_transformation_mode = ir::CoordTransform::kAsymmetric;
        a.nearest_mode = ir::NearestMode::kFloor;
      }
      if (IsUpsample(n)) return ReadUpsampleAttrs(n, std::get<ir::ResizeAttrs>(attrs));
      break;
    default:
      break;
  }
  QCC_RETURN_IF_ERROR(ReadAttrs(n, attrs));
  switch (kind) {
    case OpKind::kConstant:
      return ReadConstantValue(n, std::get<ir::ConstantAttrs>(attrs));
    case OpKind::kConstantOfShape: {
      auto& a = std::get<ir::ConstantAttrs>(attrs);
      if (!a.value.defined()) a.value = Tensor(DType::kFloat32, {1});
      return absl::OkStatus();
    }
    case OpKind::kBatchNormalization:
      if (n.opset < 9) {
        QCC_ASSIGN_OR_RETURN(auto spatial, GetIntAttr(n, "spatial"));
        if (spatial && *spatial == 0) {
          return n.Error(absl::StatusCode::kUnimplemented,
                         "spatial=0 (per-activation statistics) is not supported");
        }
      }
      return absl::OkStatus();
    default:
      return absl::OkStatus();
  }
}

int KeptOutputs(const NodeImport& n, OpKind kind, int num_onnx_outputs) {
  if (kind == OpKind::kBatchNormalization && n.opset < 14) return std::min(num_onnx_outputs, 1);
  return num_onnx_outputs;
}

absl::Status CanonicalizeInputs(NodeImport& n) {
  const OpKind kind = n.node->kind();
  if (IsReduction(kind)) {
    if (n.opset < ReduceAxesInputOpset(kind)) return IntsAttrToInput(n, "axes", 1, false);
    return absl::OkStatus();
  }
  switch (kind) {
    case OpKind::kClip:
      if (n.opset >= 11) return absl::OkStatus();
      QCC_RETURN_IF_ERROR(FloatAttrToInput(n, "min", 1));
      return FloatAttrToInput(n, "max", 2);
    case OpKind::kPad:
      if (n.opset >= 11) return absl::OkStatus();
      QCC_RETURN_IF_ERROR(IntsAttrToInput(n, "pads", 1, true));
      return FloatAttrToInput(n, "value", 2);
    case OpKind::kSlice:
      if (n.opset >= 10) return absl::OkStatus();
      QCC_RETURN_IF_ERROR(IntsAttrToInput(n, "starts", 1, true));
      QCC_RETURN_IF_ERROR(IntsAttrToInput(n, "ends", 2, true));
      return IntsAttrToInput(n, "axes", 3, false);
    case OpKind::kSqueeze:
      return n.opset < 13 ? IntsAttrToInput(n, "axes", 1, false) : absl::OkStatus();
    case OpKind::kUnsqueeze:
      return n.opset < 13 ? IntsAttrToInput(n, "axes", 1, true) : absl::OkStatus();
    case OpKind::kSplit:
      return n.opset < 13 ? IntsAttrToInput(n, "split", 1, false) : absl::OkStatus();
    case OpKind::kResize:
      return CanonicalizeResize(n);
    default:
      return absl::OkStatus();
  }
}

}  // namespace qcc::frontend::internal
