// OpKind and the static op table generated from ir/ops.def.
#ifndef QCC_IR_OP_KIND_H_
#define QCC_IR_OP_KIND_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "ir/attrs.h"

namespace qcc::ir {

/// Every op kind, in ops.def order.
enum class OpKind : uint16_t {
#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out) k##kind,
#include "ir/ops.def"
#undef OP
};

/// Number of op kinds.
inline constexpr int kNumOpKinds = 0
#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out) +1
#include "ir/ops.def"
#undef OP
    ;

/// Static facts about an op kind, from ops.def.
struct OpInfo {
  absl::string_view name;  // the ONNX op type
  int min_inputs;
  int max_inputs;  // -1: variadic
  int min_outputs;
  int max_outputs;  // -1: variadic
};

/// The table entry of `kind`.
const OpInfo& GetOpInfo(OpKind kind);
/// The ONNX op type name of `kind`.
inline absl::string_view OpName(OpKind kind) { return GetOpInfo(kind).name; }
/// Looks an ONNX op type (default domain) up; nullopt when qcc does not know it.
std::optional<OpKind> OpKindFromName(absl::string_view onnx_name);
/// Default-constructed attributes of the type `kind` uses.
Attrs DefaultAttrs(OpKind kind);

}  // namespace qcc::ir

#endif  // QCC_IR_OP_KIND_H_
