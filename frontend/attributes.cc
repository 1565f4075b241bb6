// Reading ONNX attributes into the typed attribute structs of ir/attrs.h, by field name.
#include <iterator>
#include <type_traits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontend/internal/node_import.h"
#include "frontend/tensor_proto.h"
#include "ir/op_kind.h"

namespace qcc::frontend::internal {

std::string NameTable::Fresh(absl::string_view stem) {
  std::string name(stem);
  for (int k = 1; names_.contains(name); ++k) name = absl::StrCat(stem, "_", k);
  names_.insert(name);
  return name;
}

std::string NodeImport::Label() const {
  if (proto.name().empty()) return absl::StrCat("node #", index);
  return absl::StrCat("node '", proto.name(), "'");
}

absl::Status NodeImport::Error(absl::StatusCode code, absl::string_view message) const {
  return absl::Status(
      code, absl::StrCat(Label(), " (", proto.op_type(), ", opset ", opset, "): ", message));
}

ir::Value* NodeImport::AddConstant(absl::string_view suffix, Tensor t) {
  return graph.NewConstant(names.Fresh(absl::StrCat(node->name(), "_", suffix)), std::move(t));
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& node, absl::string_view name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

namespace {

using onnx::AttributeProto;

/// The attribute's type; models older than IR version 2 leave `type` unset, and then the field
/// that holds a value says it.
int EffectiveType(const AttributeProto& a) {
  if (a.type() != AttributeProto::UNDEFINED) return a.type();
  if (a.has_f()) return AttributeProto::FLOAT;
  if (a.has_i()) return AttributeProto::INT;
  if (a.has_s()) return AttributeProto::STRING;
  if (a.has_t()) return AttributeProto::TENSOR;
  if (a.has_g()) return AttributeProto::GRAPH;
  if (a.floats_size() > 0) return AttributeProto::FLOATS;
  if (a.ints_size() > 0) return AttributeProto::INTS;
  if (a.strings_size() > 0) return AttributeProto::STRINGS;
  return AttributeProto::UNDEFINED;
}

/// OK when `a` has type `want`; an untyped empty attribute passes as an empty list.
absl::Status CheckType(const NodeImport& n, const AttributeProto& a, int want) {
  const int have = EffectiveType(a);
  if (have == want) return absl::OkStatus();
  if (have == AttributeProto::UNDEFINED &&
      (want == AttributeProto::INTS || want == AttributeProto::FLOATS)) {
    return absl::OkStatus();
  }
  auto type_name = [](int t) -> std::string {
    return AttributeProto::AttributeType_IsValid(t)
               ? AttributeProto::AttributeType_Name(static_cast<AttributeProto::AttributeType>(t))
               : absl::StrCat(t);
  };
  return n.Error(absl::StatusCode::kInvalidArgument,
                 absl::StrCat("attribute '", a.name(), "' has type ", type_name(have),
                              ", expected ", type_name(want)));
}

/// Field names of the attribute structs that are qcc's own, not ONNX attributes.
bool IsInternalField(absl::string_view name) {
  return name == "coerce_2d" || absl::StartsWith(name, "qcc_");
}

/// The visitor handed to an attribute struct's Visit: reads each field from the attribute of
/// the same name; the first error sticks.
class AttrReader {
 public:
  explicit AttrReader(const NodeImport& n) : n_(n) {}
  absl::Status status() const { return status_; }

  template <typename T>
  void operator()(absl::string_view name, T& field) {
    if (!status_.ok() || IsInternalField(name)) return;
    const AttributeProto* a = FindAttr(n_.proto, name);
    if (a != nullptr) status_ = Read(*a, field);
  }

 private:
  absl::Status Read(const AttributeProto& a, int64_t& f) {
    if (auto s = CheckType(n_, a, AttributeProto::INT); !s.ok()) return s;
    f = a.i();
    return absl::OkStatus();
  }
  absl::Status Read(const AttributeProto& a, float& f) {
    if (auto s = CheckType(n_, a, AttributeProto::FLOAT); !s.ok()) return s;
    f = a.f();
    return absl::OkStatus();
  }
  absl::Status Read(const AttributeProto& a, ir::Ints& f) {
    if (auto s = CheckType(n_, a, AttributeProto::INTS); !s.ok()) return s;
    f.assign(a.ints().begin(), a.ints().end());
    return absl::OkStatus();
  }
  absl::Status Read(const AttributeProto& a, ir::Floats& f) {
    if (auto s = CheckType(n_, a, AttributeProto::FLOATS); !s.ok()) return s;
    f.assign(a.floats().begin(), a.floats().end());
    return absl::OkStatus();
  }
  absl::Status Read(const AttributeProto& a, DType& f) {
    if (auto s = CheckType(n_, a, AttributeProto::INT); !s.ok()) return s;
    auto t = DTypeFromOnnx(static_cast<int>(a.i()));
    if (!t.ok()) {
      return n_.Error(t.status().code(),
                      absl::StrCat("attribute '", a.name(), "': ", t.status().message()));
    }
    f = *t;
    return absl::OkStatus();
  }
  absl::Status Read(const AttributeProto& a, Tensor& f) {
    if (auto s = CheckType(n_, a, AttributeProto::TENSOR); !s.ok()) return s;
    auto t = TensorFromProto(a.t(), n_.base_dir);
    if (!t.ok()) {
      return n_.Error(t.status().code(),
                      absl::StrCat("attribute '", a.name(), "': ", t.status().message()));
    }
    f = *std::move(t);
    return absl::OkStatus();
  }
  template <typename E, typename = std::enable_if_t<std::is_enum_v<E>>>
  absl::Status Read(const AttributeProto& a, E& f) {
    if (auto s = CheckType(n_, a, AttributeProto::STRING); !s.ok()) return s;
    if (a.s().empty()) return absl::OkStatus();  // some exporters write "" for the default
    const auto& names = ir::EnumNames<E>::kNames;
    for (size_t i = 0; i < std::size(names); ++i) {
      if (names[i] == a.s()) {
        f = static_cast<E>(i);
        return absl::OkStatus();
      }
    }
    return n_.Error(absl::StatusCode::kInvalidArgument,
                    absl::StrCat("attribute '", a.name(), "' is '", a.s(),
                                 "'; allowed values: ", absl::StrJoin(names, ", ")));
  }

  const NodeImport& n_;
  absl::Status status_;
};

}  // namespace

absl::Status ReadAttrs(const NodeImport& n, ir::Attrs& attrs) {
  AttrReader reader(n);
  std::visit([&](auto& a) { a.Visit(reader); }, attrs);
  return reader.status();
}

absl::StatusOr<std::optional<int64_t>> GetIntAttr(const NodeImport& n, absl::string_view name) {
  const AttributeProto* a = FindAttr(n.proto, name);
  if (a == nullptr) return std::nullopt;
  if (auto s = CheckType(n, *a, AttributeProto::INT); !s.ok()) return s;
  return a->i();
}

absl::StatusOr<std::optional<float>> GetFloatAttr(const NodeImport& n, absl::string_view name) {
  const AttributeProto* a = FindAttr(n.proto, name);
  if (a == nullptr) return std::nullopt;
  if (auto s = CheckType(n, *a, AttributeProto::FLOAT); !s.ok()) return s;
  return a->f();
}

absl::StatusOr<std::optional<std::string>> GetStringAttr(const NodeImport& n,
                                                         absl::string_view name) {
  const AttributeProto* a = FindAttr(n.proto, name);
  if (a == nullptr) return std::nullopt;
  if (auto s = CheckType(n, *a, AttributeProto::STRING); !s.ok()) return s;
  return a->s();
}

absl::StatusOr<std::optional<std::vector<int64_t>>> GetIntsAttr(const NodeImport& n,
                                                                absl::string_view name) {
  const AttributeProto* a = FindAttr(n.proto, name);
  if (a == nullptr) return std::nullopt;
  if (auto s = CheckType(n, *a, AttributeProto::INTS); !s.ok()) return s;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

absl::StatusOr<std::optional<std::vector<float>>> GetFloatsAttr(const NodeImport& n,
                                                                absl::string_view name) {
  const AttributeProto* a = FindAttr(n.proto, name);
  if (a == nullptr) return std::nullopt;
  if (auto s = CheckType(n, *a, AttributeProto::FLOATS); !s.ok()) return s;
  return std::vector<float>(a->floats().begin(), a->floats().end());
}

}  // namespace qcc::frontend::internal
