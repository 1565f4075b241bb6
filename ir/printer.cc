#include "ir/printer.h"

#include <algorithm>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace qcc::ir {

std::string TypeToString(const Graph& graph, const TensorType& type) {
  std::string s(DTypeName(type.dtype));
  if (!type.has_rank()) return s + "[*]";
  std::vector<std::string> dims;
  for (Dim d : *type.dims) {
    if (IsKnown(d)) {
      dims.push_back(absl::StrCat(d));
    } else if (IsSymbol(d) && SymbolIndex(d) < static_cast<int>(graph.symbols().size())) {
      dims.push_back(graph.symbols()[SymbolIndex(d)]);
    } else {
      dims.push_back("?");
    }
  }
  return absl::StrCat(s, "[", absl::StrJoin(dims, ","), "]");
}

namespace {

template <typename T, typename = void>
struct IsAttrEnum : std::false_type {};
template <typename T>
struct IsAttrEnum<T, std::void_t<decltype(EnumNames<T>::kNames)>> : std::true_type {};

struct AttrPrinter {
  std::vector<std::string>* parts;
  void operator()(absl::string_view name, int64_t v) {
    parts->push_back(absl::StrCat(name, "=", v));
  }
  void operator()(absl::string_view name, float v) { parts->push_back(absl::StrCat(name, "=", v)); }
  void operator()(absl::string_view name, const Ints& v) {
    parts->push_back(absl::StrCat(name, "=[", absl::StrJoin(v, ","), "]"));
  }
  void operator()(absl::string_view name, DType v) {
    parts->push_back(absl::StrCat(name, "=", DTypeName(v)));
  }
  void operator()(absl::string_view name, const Tensor& v) {
    std::string s = absl::StrCat(name, "=", DTypeName(v.dtype()), DimsToString(v.dims()));
    if (v.numel() <= 8) {
      std::vector<double> vals;
      for (int64_t i = 0; i < v.numel(); ++i) vals.push_back(v.GetAsDouble(i));
      absl::StrAppend(&s, "{", absl::StrJoin(vals, ","), "}");
    }
    parts->push_back(s);
  }
  template <typename E>
  std::enable_if_t<IsAttrEnum<E>::value> operator()(absl::string_view name, E v) {
    parts->push_back(absl::StrCat(name, "=", EnumNames<E>::kNames[static_cast<int>(v)]));
  }
};

}  // namespace

std::string AttrsToString(const Node& node) {
  std::vector<std::string> parts, defaults;
  std::visit(
      [&](const auto& a) {
        a.Visit(AttrPrinter{&parts});
        std::decay_t<decltype(a)>{}.Visit(AttrPrinter{&defaults});
      },
      node.attrs_variant());
  std::vector<std::string> changed;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] != defaults[i]) changed.push_back(parts[i]);
  }
  return absl::StrJoin(changed, ", ");
}

namespace {

/// A value's type, and an int8 tensor's quantization: "i8[N,16] q(0.0235, 0)", with
/// " clamped [lo, hi]" when its float values were clamped before quantizing; an int8 weight's
/// "q(16 scales on axis 0, 0.00123 to 0.0456)". What a QDQ model gives a float tensor (after
/// absorb-qdq): "f32[N,16] given q(0.0235, 0)", a float weight's "given q(16 scales, 0.00123 to
/// 0.0456)".
std::string ValueTypeToString(const Graph& graph, const Value& v) {
  std::string s = TypeToString(graph, v.type());
  if (const ChannelScales* c = v.channel_scales(); c != nullptr && !c->scales.empty()) {
    const auto [lo, hi] = std::minmax_element(c->scales.begin(), c->scales.end());
    absl::StrAppend(&s, " q(", c->scales.size(), c->scales.size() == 1 ? " scale" : " scales",
                    " on axis ", c->axis, ", ", *lo, " to ", *hi, ")");
  }
  if (const QuantParams* q = v.quant()) {
    absl::StrAppend(&s, " q(", q->scale, ", ", q->zero_point, ")");
    if (const std::pair<float, float>* c = v.saturation()) {
      absl::StrAppend(&s, " clamped [", c->first, ", ", c->second, "]");
    }
  }
  if (const QuantParams* q = v.given_quant()) {
    absl::StrAppend(&s, " given q(", q->scale, ", ", q->zero_point, ")");
  }
  if (const std::vector<float>* w = v.given_weight_scales(); w != nullptr && !w->empty()) {
    const auto [lo, hi] = std::minmax_element(w->begin(), w->end());
    absl::StrAppend(&s, " given q(", w->size(), w->size() == 1 ? " scale, " : " scales, ", *lo,
                    w->size() == 1 ? "" : absl::StrCat(" to ", *hi), ")");
  }
  return s;
}

}  // namespace

std::string PrintGraph(const Graph& graph) {
  std::string s = absl::StrCat("graph ", graph.name(), " (opset ", graph.opset(), ")\n");
  for (const Value* v : graph.inputs()) {
    absl::StrAppend(&s, "  input  %", v->name(), " : ", ValueTypeToString(graph, *v), "\n");
  }
  for (const auto& v : graph.values()) {
    if (v->constant() != nullptr) {
      absl::StrAppend(&s, "  const  %", v->name(), " : ", ValueTypeToString(graph, *v), "\n");
    }
  }
  for (const auto& n : graph.nodes()) {
    std::vector<std::string> outs, ins, types;
    for (const Value* v : n->outputs()) {
      outs.push_back(absl::StrCat("%", v->name()));
      types.push_back(ValueTypeToString(graph, *v));
    }
    for (const Value* v : n->inputs()) ins.push_back(v ? absl::StrCat("%", v->name()) : "none");
    std::string attrs = AttrsToString(*n);
    absl::StrAppend(&s, "  ", absl::StrJoin(outs, ", "), " = ", OpName(n->kind()), "(",
                    absl::StrJoin(ins, ", "), ")", attrs.empty() ? "" : " {" + attrs + "}", " : ",
                    absl::StrJoin(types, ", "), "  # ", n->name(), "\n");
  }
  for (const Value* v : graph.outputs()) {
    absl::StrAppend(&s, "  output %", v->name(), " : ", ValueTypeToString(graph, *v), "\n");
  }
  return s;
}

}  // namespace qcc::ir
