// Integers known at compile time up to the graph's symbolic extents.
//
// Exporters compute shapes at run time: Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1]))
// flattens keeping the batch. With a dynamic batch N that value is not a constant, but it is
// known: [N, -1]. A SymInt holds such an element as an affine form c + sum_k a_k * s_k over the
// graph's symbols s_k (ir::Graph::symbols()); sums, differences and products with constants stay
// affine, anything else (N * N, N / 3 when 3 does not divide it) is not a SymInt.
#ifndef QCC_IR_SYM_INT_H_
#define QCC_IR_SYM_INT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/types.h"

namespace qcc::ir {

/// c + sum_k a_k * s_k, with integer c and a_k and the s_k symbols of the graph (extents >= 0).
class SymInt {
 public:
  /// The constant `c`.
  SymInt(int64_t c = 0) : constant_(c) {}  // NOLINT: implicit, constants mix freely
  /// The extent `d`: its value when known, 1 * symbol for a symbol; nullopt when unknown.
  static std::optional<SymInt> OfDim(Dim d);

  bool is_constant() const { return terms_.empty(); }
  /// The constant part (the whole value when is_constant()).
  int64_t constant() const { return constant_; }
  /// (symbol index, coefficient) pairs, sorted by symbol, coefficients non-zero.
  const std::vector<std::pair<int, int64_t>>& terms() const { return terms_; }
  /// The Dim this value is as an extent: the value of a constant >= 0, the symbol of
  /// 1 * symbol; kUnknownDim otherwise.
  Dim AsDim() const;
  /// The value with every symbol replaced by `value(index)`; nullopt on overflow.
  template <typename F>
  std::optional<int64_t> Evaluate(F&& value) const {
    __int128 v = constant_;
    for (const auto& [sym, coef] : terms_) v += static_cast<__int128>(coef) * value(sym);
    if (v < INT64_MIN || v > INT64_MAX) return std::nullopt;
    return static_cast<int64_t>(v);
  }

  /// a + b and a - b; nullopt on overflow.
  static std::optional<SymInt> Add(const SymInt& a, const SymInt& b);
  static std::optional<SymInt> Sub(const SymInt& a, const SymInt& b);
  /// a * b when one side is a constant; nullopt otherwise or on overflow.
  static std::optional<SymInt> Mul(const SymInt& a, const SymInt& b);
  /// a / b truncated toward zero (ONNX integer Div, as C) when b is a non-zero constant and
  /// either a is a constant or b divides every part of a exactly; nullopt otherwise.
  static std::optional<SymInt> Div(const SymInt& a, const SymInt& b);
  /// -1, 0 or 1 when the sign of a - b is the same for every value of the symbols (all >= 0);
  /// nullopt when it depends on them.
  static std::optional<int> Compare(const SymInt& a, const SymInt& b);

  bool operator==(const SymInt& o) const { return constant_ == o.constant_ && terms_ == o.terms_; }
  bool operator!=(const SymInt& o) const { return !(*this == o); }
  /// "3", "N", "2*N+1" (symbols named by `names`, or s0, s1, ... when it is too short).
  std::string ToString(const std::vector<std::string>& names = {}) const;

 private:
  int64_t constant_ = 0;
  std::vector<std::pair<int, int64_t>> terms_;
};

}  // namespace qcc::ir

#endif  // QCC_IR_SYM_INT_H_
