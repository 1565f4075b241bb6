#include "ir/op_kind.h"

#include "absl/container/flat_hash_map.h"

namespace qcc::ir {

namespace {

constexpr OpInfo kOpInfos[] = {
#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out) \
  {name, min_in, max_in, min_out, max_out},
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
#define OP(kind, name, attrs, shape_fn, min_in, max_in, min_out, max_out) \
  case OpKind::k##kind:                                                   \
    return attrs{};
#include "ir/ops.def"
#undef OP
  }
  return NoAttrs{};
}

}  // namespace qcc::ir
