#include "ir/op_kind.h"

#include "absl/container/flat_hash_map.h"

namespace qcc::ir {

namespace {

/// ops.def's Unary column: a function of support/unary_fn.h, or None.
struct UnaryColumn {
  static constexpr int kNone = -1;
#define QCC_UNARY_COLUMN(fn, cost) static constexpr int k##fn = static_cast<int>(UnaryFn::k##fn);
  QCC_UNARY_FNS(QCC_UNARY_COLUMN)
#undef QCC_UNARY_COLUMN
};

constexpr OpInfo kOpInfos[] = {
#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out, int8, unary) \
  {name, min_in, max_in, min_out, max_out, Int8Form::k##int8, UnaryColumn::k##unary},
#include "ir/ops.def"
#undef OP
};

}  // namespace

const OpInfo& GetOpInfo(OpKind kind) { return kOpInfos[static_cast<int>(kind)]; }

std::optional<OpKind> OpKindFromName(absl::string_view onnx_name) {
  static const auto* by_name = [] {
    auto* m = new absl::flat_hash_map<absl::string_view, OpKind>();
    for (int i = 0; i < kNumOpKinds; ++i) m->emplace(kOpInfos[i].name, static_cast<OpKind>(i));
    return m;
  }();
  auto it = by_name->find(onnx_name);
  if (it == by_name->end()) return std::nullopt;
  return it->second;
}

Attrs DefaultAttrs(OpKind kind) {
  switch (kind) {
#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out, int8, unary) \
  case OpKind::k##kind:                                                                \
    return attrs{};
#include "ir/ops.def"
#undef OP
  }
  return NoAttrs{};
}

}  // namespace qcc::ir
