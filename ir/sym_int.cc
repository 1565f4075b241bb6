#include "ir/sym_int.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace qcc::ir {
namespace {

std::optional<int64_t> Checked(__int128 v) {
  if (v < INT64_MIN || v > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace

std::optional<SymInt> SymInt::OfDim(Dim d) {
  if (IsKnown(d)) return SymInt(d);
  if (!IsSymbol(d)) return std::nullopt;
  SymInt s;
  s.terms_.push_back({SymbolIndex(d), 1});
  return s;
}

Dim SymInt::AsDim() const {
  if (is_constant()) return constant_ >= 0 ? constant_ : kUnknownDim;
  if (constant_ == 0 && terms_.size() == 1 && terms_[0].second == 1) {
    return SymbolDim(terms_[0].first);
  }
  return kUnknownDim;
}

std::optional<SymInt> SymInt::Add(const SymInt& a, const SymInt& b) {
  SymInt r;
  std::optional<int64_t> c = Checked(static_cast<__int128>(a.constant_) + b.constant_);
  if (!c) return std::nullopt;
  r.constant_ = *c;
  // Merge the two sorted term lists, dropping terms that cancel.
  size_t i = 0, j = 0;
  while (i < a.terms_.size() || j < b.terms_.size()) {
    if (j == b.terms_.size() || (i < a.terms_.size() && a.terms_[i].first < b.terms_[j].first)) {
      r.terms_.push_back(a.terms_[i++]);
    } else if (i == a.terms_.size() || b.terms_[j].first < a.terms_[i].first) {
      r.terms_.push_back(b.terms_[j++]);
    } else {
      std::optional<int64_t> coef =
          Checked(static_cast<__int128>(a.terms_[i].second) + b.terms_[j].second);
      if (!coef) return std::nullopt;
      if (*coef != 0) r.terms_.push_back({a.terms_[i].first, *coef});
      ++i, ++j;
    }
  }
  return r;
}

std::optional<SymInt> SymInt::Sub(const SymInt& a, const SymInt& b) {
  std::optional<SymInt> minus_b = Mul(b, SymInt(-1));
  if (!minus_b) return std::nullopt;
  return Add(a, *minus_b);
}

std::optional<SymInt> SymInt::Mul(const SymInt& a, const SymInt& b) {
  if (!a.is_constant() && !b.is_constant()) return std::nullopt;
  const SymInt& s = a.is_constant() ? b : a;
  const int64_t k = a.is_constant() ? a.constant_ : b.constant_;
  if (k == 0) return SymInt(0);
  SymInt r;
  std::optional<int64_t> c = Checked(static_cast<__int128>(s.constant_) * k);
  if (!c) return std::nullopt;
  r.constant_ = *c;
  for (const auto& [sym, coef] : s.terms_) {
    std::optional<int64_t> v = Checked(static_cast<__int128>(coef) * k);
    if (!v) return std::nullopt;
    r.terms_.push_back({sym, *v});
  }
  return r;
}

std::optional<SymInt> SymInt::Div(const SymInt& a, const SymInt& b) {
  if (!b.is_constant() || b.constant_ == 0) return std::nullopt;
  const int64_t d = b.constant_;
  // INT64_MIN / -1 overflows; nothing else does.
  if (d == -1) return Mul(a, SymInt(-1));
  if (a.is_constant()) return SymInt(a.constant_ / d);
  if (a.constant_ % d != 0) return std::nullopt;
  SymInt r(a.constant_ / d);
  for (const auto& [sym, coef] : a.terms_) {
    if (coef % d != 0) return std::nullopt;
    r.terms_.push_back({sym, coef / d});
  }
  return r;
}

std::optional<int> SymInt::Compare(const SymInt& a, const SymInt& b) {
  std::optional<SymInt> d = Sub(a, b);
  if (!d) return std::nullopt;
  if (d->is_constant()) return d->constant_ < 0 ? -1 : (d->constant_ > 0 ? 1 : 0);
  // With every symbol >= 0, d >= c when all coefficients are >= 0 and d <= c when all are <= 0.
  const bool all_positive =
      std::all_of(d->terms_.begin(), d->terms_.end(), [](const auto& t) { return t.second > 0; });
  const bool all_negative =
      std::all_of(d->terms_.begin(), d->terms_.end(), [](const auto& t) { return t.second < 0; });
  if (all_positive && d->constant_ > 0) return 1;
  if (all_negative && d->constant_ < 0) return -1;
  return std::nullopt;
}

std::string SymInt::ToString(const std::vector<std::string>& names) const {
  std::string s;
  for (const auto& [sym, coef] : terms_) {
    const std::string name =
        sym < static_cast<int>(names.size()) ? names[sym] : absl::StrCat("s", sym);
    if (!s.empty()) s += coef < 0 ? "-" : "+";
    if (s.empty() && coef < 0) s += "-";
    const int64_t mag = coef < 0 ? -coef : coef;
    s += mag == 1 ? name : absl::StrCat(mag, "*", name);
  }
  if (s.empty()) return absl::StrCat(constant_);
  if (constant_ != 0)
    absl::StrAppend(&s, constant_ < 0 ? "-" : "+", constant_ < 0 ? -constant_ : constant_);
  return s;
}

}  // namespace qcc::ir
