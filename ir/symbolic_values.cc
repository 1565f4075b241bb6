#include "ir/symbolic_values.h"

#include <cmath>
#include <functional>
#include <utility>

#include "ir/shape_fns/movement_params.h"

namespace qcc::ir {
namespace {

using Elem = std::optional<SymInt>;

/// The static element count of a rank-0/1 type within the tracking limit, or -1.
int64_t TrackedLength(const TensorType& t) {
  if (!t.IsStatic() || t.rank() > 1) return -1;
  const int64_t n = t.rank() == 0 ? 1 : (*t.dims)[0];
  return n <= kMaxSymbolicElements ? n : -1;
}

bool AnyKnown(const SymbolicValue& v) {
  for (const Elem& e : v) {
    if (e) return true;
  }
  return false;
}

/// Elementwise `fn` over two values broadcast to `n` elements (each of length n or 1).
std::optional<SymbolicValue> Binary(const SymbolicValue* a, const SymbolicValue* b, int64_t n,
                                    const std::function<Elem(const SymInt&, const SymInt&)>& fn) {
  if (a == nullptr || b == nullptr) return std::nullopt;
  auto at = [n](const SymbolicValue& v, int64_t i) -> const Elem* {
    if (static_cast<int64_t>(v.size()) == n) return &v[i];
    return v.size() == 1 ? &v[0] : nullptr;
  };
  SymbolicValue out(n);
  for (int64_t i = 0; i < n; ++i) {
    const Elem* x = at(*a, i);
    const Elem* y = at(*b, i);
    if (x == nullptr || y == nullptr) return std::nullopt;
    if (*x && *y) out[i] = fn(**x, **y);
  }
  return out;
}

/// A 0/1 element from a decided comparison.
Elem Truth(std::optional<bool> b) {
  if (!b) return std::nullopt;
  return SymInt(*b ? 1 : 0);
}

/// Integer division as the dtype does it: truncating for integers; exact only for floats
/// (a non-integral quotient is not tracked).
Elem Divide(const SymInt& a, const SymInt& b, bool is_float) {
  if (is_float && a.is_constant() && b.is_constant() && b.constant() != 0 &&
      a.constant() % b.constant() != 0) {
    return std::nullopt;
  }
  return SymInt::Div(a, b);
}

/// The constant of a known constant element.
std::optional<int64_t> ConstantOf(const Elem& e) {
  if (!e || !e->is_constant()) return std::nullopt;
  return e->constant();
}

/// A value whose elements are all constant, as an i64 tensor of `dims` (for ResolveSlice).
std::optional<Tensor> AsTensor(const SymbolicValue* v) {
  if (v == nullptr) return std::nullopt;
  std::vector<int64_t> xs;
  for (const Elem& e : *v) {
    std::optional<int64_t> c = ConstantOf(e);
    if (!c) return std::nullopt;
    xs.push_back(*c);
  }
  const int64_t n = static_cast<int64_t>(xs.size());
  return Tensor::FromVector<int64_t>(DType::kInt64, {n}, xs);
}

std::optional<SymbolicValue> ShapeOf(const Node& node, const TensorType& x) {
  if (!x.has_rank()) return std::nullopt;
  const auto& attrs = node.attrs<ShapeAttrs>();
  const int64_t rank = x.rank();
  auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  const int64_t start = clamp(attrs.start), end = std::max(start, clamp(attrs.end));
  SymbolicValue out;
  for (int64_t i = start; i < end; ++i) out.push_back(SymInt::OfDim((*x.dims)[i]));
  return out;
}

/// Size: the product of the extents, while at most one factor is not a constant.
std::optional<SymbolicValue> SizeOf(const TensorType& x) {
  if (!x.has_rank()) return std::nullopt;
  SymInt product(1);
  for (Dim d : *x.dims) {
    std::optional<SymInt> e = SymInt::OfDim(d);
    if (!e) return std::nullopt;
    std::optional<SymInt> p = SymInt::Mul(product, *e);
    if (!p) return std::nullopt;
    product = *p;
  }
  return SymbolicValue{product};
}

std::optional<SymbolicValue> GatherOf(const Node& node, const SymbolicValue* data,
                                      const SymbolicValue* indices, const TensorType& data_type) {
  if (data == nullptr || indices == nullptr || data_type.rank() != 1) return std::nullopt;
  const int64_t axis = node.attrs<AxisAttrs>().axis;
  if (axis != 0 && axis != -1) return std::nullopt;
  const int64_t n = static_cast<int64_t>(data->size());
  SymbolicValue out;
  for (const Elem& e : *indices) {
    std::optional<int64_t> k = ConstantOf(e);
    if (!k) return std::nullopt;
    const int64_t i = *k < 0 ? *k + n : *k;
    if (i < 0 || i >= n) return std::nullopt;
    out.push_back((*data)[i]);
  }
  return out;
}

std::optional<SymbolicValue> SliceOf(absl::Span<const SymbolicValue* const> in,
                                     const TensorType& data_type) {
  if (in[0] == nullptr || data_type.rank() != 1) return std::nullopt;
  std::optional<Tensor> starts = AsTensor(in[1]), ends = AsTensor(in[2]);
  std::optional<Tensor> axes = in.size() > 3 && in[3] ? AsTensor(in[3]) : std::nullopt;
  std::optional<Tensor> steps = in.size() > 4 && in[4] ? AsTensor(in[4]) : std::nullopt;
  if (!starts || !ends || (in.size() > 3 && in[3] && !axes) || (in.size() > 4 && in[4] && !steps)) {
    return std::nullopt;
  }
  const std::vector<Dim> dims = {static_cast<Dim>(in[0]->size())};
  auto resolved =
      ResolveSlice(dims, *starts, *ends, axes ? &*axes : nullptr, steps ? &*steps : nullptr);
  if (!resolved.ok()) return std::nullopt;
  const SliceAxis& a = (*resolved)[0];
  SymbolicValue out;
  for (int64_t i = 0; i < a.count; ++i) out.push_back((*in[0])[a.start + i * a.step]);
  return out;
}

std::optional<SymbolicValue> WhereOf(absl::Span<const SymbolicValue* const> in, int64_t n) {
  if (in[0] == nullptr || in[1] == nullptr || in[2] == nullptr) return std::nullopt;
  auto at = [n](const SymbolicValue& v, int64_t i) -> const Elem* {
    if (static_cast<int64_t>(v.size()) == n) return &v[i];
    return v.size() == 1 ? &v[0] : nullptr;
  };
  SymbolicValue out(n);
  for (int64_t i = 0; i < n; ++i) {
    const Elem* c = at(*in[0], i);
    const Elem* x = at(*in[1], i);
    const Elem* y = at(*in[2], i);
    if (c == nullptr || x == nullptr || y == nullptr) return std::nullopt;
    std::optional<int64_t> cond = ConstantOf(*c);
    if (cond) out[i] = *cond != 0 ? *x : *y;
  }
  return out;
}

/// ReduceProd / ReduceSum of every element (the only form shape code uses).
std::optional<SymbolicValue> ReduceAllOf(OpKind kind, const SymbolicValue* in) {
  if (in == nullptr) return std::nullopt;
  SymInt acc(kind == OpKind::kReduceProd ? 1 : 0);
  for (const Elem& e : *in) {
    if (!e) return std::nullopt;
    std::optional<SymInt> next =
        kind == OpKind::kReduceProd ? SymInt::Mul(acc, *e) : SymInt::Add(acc, *e);
    if (!next) return std::nullopt;
    acc = *next;
  }
  return SymbolicValue{acc};
}

/// The transfer function of one node with a single output of `n` tracked elements.
std::optional<SymbolicValue> Transfer(const Node& node, absl::Span<const TensorType> types,
                                      absl::Span<const SymbolicValue* const> in,
                                      const TensorType& out_type, int64_t n) {
  const bool is_float = IsFloat(out_type.dtype);
  auto same_elements = [&]() -> std::optional<SymbolicValue> {
    if (in[0] == nullptr || static_cast<int64_t>(in[0]->size()) != n) return std::nullopt;
    return *in[0];
  };
  auto compare = [&](auto decide) {
    return Binary(in[0], in[1], n, [&](const SymInt& a, const SymInt& b) {
      std::optional<int> c = SymInt::Compare(a, b);
      return Truth(c ? std::optional<bool>(decide(*c)) : std::nullopt);
    });
  };
  switch (node.kind()) {
    case OpKind::kShape:
      return ShapeOf(node, types[0]);
    case OpKind::kSize:
      return SizeOf(types[0]);
    case OpKind::kConstant:
      return SymbolicOfTensor(node.attrs<ConstantAttrs>().value);
    case OpKind::kIdentity:
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return same_elements();
    case OpKind::kCast: {
      // Tracked elements are integers, which every numeric Cast keeps (bool: non-zero is 1).
      if (out_type.dtype != DType::kBool) return same_elements();
      std::optional<SymbolicValue> v = same_elements();
      if (!v) return std::nullopt;
      for (Elem& e : *v) {
        std::optional<int64_t> c = ConstantOf(e);
        e = c ? Elem(SymInt(*c != 0 ? 1 : 0)) : std::nullopt;
      }
      return v;
    }
    case OpKind::kGather:
      return GatherOf(node, in[0], in[1], types[0]);
    case OpKind::kSlice:
      return SliceOf(in, types[0]);
    case OpKind::kConcat: {
      // An input of unknown value still has a known length: its elements are unknown.
      SymbolicValue out;
      for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != nullptr) {
          out.insert(out.end(), in[i]->begin(), in[i]->end());
          continue;
        }
        const int64_t len = TrackedLength(types[i]);
        if (len < 0 || types[i].rank() != 1) return std::nullopt;
        out.insert(out.end(), len, std::nullopt);
      }
      if (static_cast<int64_t>(out.size()) != n) return std::nullopt;
      return out;
    }
    case OpKind::kAdd:
      return Binary(in[0], in[1], n, SymInt::Add);
    case OpKind::kSub:
      return Binary(in[0], in[1], n, SymInt::Sub);
    case OpKind::kMul:
      return Binary(in[0], in[1], n, SymInt::Mul);
    case OpKind::kDiv:
      return Binary(in[0], in[1], n,
                    [&](const SymInt& a, const SymInt& b) { return Divide(a, b, is_float); });
    case OpKind::kMax:
    case OpKind::kMin: {
      if (in.size() != 2) return std::nullopt;
      const bool max = node.kind() == OpKind::kMax;
      return Binary(in[0], in[1], n, [max](const SymInt& a, const SymInt& b) -> Elem {
        std::optional<int> c = SymInt::Compare(a, b);
        if (!c) return std::nullopt;
        return (*c >= 0) == max ? a : b;
      });
    }
    case OpKind::kNeg: {
      std::optional<SymbolicValue> v = same_elements();
      if (!v) return std::nullopt;
      for (Elem& e : *v) e = e ? SymInt::Mul(*e, SymInt(-1)) : std::nullopt;
      return v;
    }
    case OpKind::kFloor:
    case OpKind::kCeil:
    case OpKind::kRound:
      return same_elements();  // tracked elements are integers
    case OpKind::kEqual:
      return compare([](int c) { return c == 0; });
    case OpKind::kLess:
      return compare([](int c) { return c < 0; });
    case OpKind::kLessOrEqual:
      return compare([](int c) { return c <= 0; });
    case OpKind::kGreater:
      return compare([](int c) { return c > 0; });
    case OpKind::kGreaterOrEqual:
      return compare([](int c) { return c >= 0; });
    case OpKind::kWhere:
      return WhereOf(in, n);
    case OpKind::kReduceProd:
    case OpKind::kReduceSum:
      if (n != 1 || node.num_inputs() > 1 || in[0] == nullptr) return std::nullopt;
      return ReduceAllOf(node.kind(), in[0]);
    default:
      return std::nullopt;  // every other op: its value is not followed
  }
}

}  // namespace

std::optional<SymbolicValue> SymbolicOfTensor(const Tensor& t) {
  if (!t.defined() || t.rank() > 1 || t.numel() > kMaxSymbolicElements) return std::nullopt;
  SymbolicValue v;
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (IsFloat(t.dtype())) {
      const double x = t.GetAsDouble(i);
      if (!(std::fabs(x) <= 9007199254740992.0) || std::floor(x) != x) return std::nullopt;
      v.push_back(SymInt(static_cast<int64_t>(x)));
    } else if (IsInteger(t.dtype()) || t.dtype() == DType::kBool) {
      v.push_back(SymInt(t.GetAsInt64(i)));
    } else {
      return std::nullopt;
    }
  }
  return v;
}

bool IsConstant(const SymbolicValue& v) {
  for (const Elem& e : v) {
    if (!e || !e->is_constant()) return false;
  }
  return true;
}

Tensor ConstantOfSymbolic(const SymbolicValue& v, const TensorType& type) {
  std::vector<int64_t> xs;
  for (const Elem& e : v) xs.push_back(e->constant());
  const Tensor t = Tensor::FromVector<int64_t>(DType::kInt64, type.StaticDims(), xs);
  return type.dtype == DType::kInt64 ? t : CastTensor(t, type.dtype);
}

std::vector<std::optional<SymbolicValue>> InferSymbolic(
    const Node& node, absl::Span<const TensorType> inputs,
    absl::Span<const SymbolicValue* const> values, absl::Span<const TensorType> outputs) {
  std::vector<std::optional<SymbolicValue>> out(outputs.size());
  if (outputs.size() != 1) return out;
  const int64_t n = TrackedLength(outputs[0]);
  if (n < 0) return out;
  std::optional<SymbolicValue> v = Transfer(node, inputs, values, outputs[0], n);
  if (v && static_cast<int64_t>(v->size()) == n && AnyKnown(*v)) out[0] = std::move(v);
  return out;
}

SymbolicValues ConstantSymbolicValues(const Graph& graph) {
  SymbolicValues values;
  for (const auto& v : graph.values()) {
    if (v->constant() == nullptr) continue;
    if (std::optional<SymbolicValue> s = SymbolicOfTensor(*v->constant())) values[v.get()] = *s;
  }
  return values;
}

SymbolicValues ComputeSymbolicValues(const Graph& graph) {
  SymbolicValues values = ConstantSymbolicValues(graph);
  for (const auto& n : graph.nodes()) {
    std::vector<TensorType> types;
    std::vector<const SymbolicValue*> ins;
    for (const Value* v : n->inputs()) {
      types.push_back(v ? v->type() : TensorType());
      auto it = v ? values.find(v) : values.end();
      ins.push_back(it == values.end() ? nullptr : &it->second);
    }
    std::vector<TensorType> outs;
    for (const Value* v : n->outputs()) outs.push_back(v->type());
    std::vector<std::optional<SymbolicValue>> results = InferSymbolic(*n, types, ins, outs);
    for (size_t i = 0; i < results.size(); ++i) {
      if (results[i]) values[n->output(static_cast<int>(i))] = *std::move(results[i]);
    }
  }
  return values;
}

}  // namespace qcc::ir
