// OpKind and the static op table generated from ir/ops.def.
#ifndef QCC_IR_OP_KIND_H_
#define QCC_IR_OP_KIND_H_

#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "ir/attrs.h"
#include "support/unary_fn.h"

namespace qcc::ir {

/// Every op kind, in ops.def order.
enum class OpKind : uint16_t {
#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out, int8, unary) k##kind,
#include "ir/ops.def"
#undef OP
};

/// Number of op kinds.
inline constexpr int kNumOpKinds = 0
#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out, int8, unary) +1
#include "ir/ops.def"
#undef OP
    ;

/// How an op kind can run in an int8 plan (ops.def's Int8 column).
enum class Int8Form : uint8_t {
  kNone,      ///< it stays in float
  kKernel,    ///< an int8 kernel of its own
  kLut,       ///< a 256-entry table of its unary function, built at compile time
  kMovement,  ///< it only picks and places elements: the output has the input's parameters
};

/// Static facts about an op kind, from ops.def.
struct OpInfo {
  absl::string_view name;  // the ONNX op type
  int min_inputs;
  int max_inputs;  // -1: variadic
  int min_outputs;
  int max_outputs;  // -1: variadic
  Int8Form int8;
  /// The elementwise function the op computes (support/unary_fn.h), or -1 for none.
  int unary;
};

/// The table entry of `kind`.
const OpInfo& GetOpInfo(OpKind kind);
/// The ONNX op type name of `kind`.
inline absl::string_view OpName(OpKind kind) { return GetOpInfo(kind).name; }
/// Looks an ONNX op type (default domain) up; nullopt when qcc does not know it.
std::optional<OpKind> OpKindFromName(absl::string_view onnx_name);
/// Default-constructed attributes of the type `kind` uses.
Attrs DefaultAttrs(OpKind kind);
/// How `kind` can run in an int8 plan.
inline Int8Form Int8FormOf(OpKind kind) { return GetOpInfo(kind).int8; }
/// The elementwise function `kind` computes, or nullopt when it is not one.
inline std::optional<UnaryFn> UnaryFnOf(OpKind kind) {
  const int fn = GetOpInfo(kind).unary;
  if (fn < 0) return std::nullopt;
  return static_cast<UnaryFn>(fn);
}

}  // namespace qcc::ir

#endif  // QCC_IR_OP_KIND_H_
