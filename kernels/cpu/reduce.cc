#include "kernels/cpu/reduce.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/container/inlined_vector.h"

namespace qcc::cpu {
namespace {

/// The input with extent-1 axes dropped and adjacent axes of the same kind (kept / reduced)
/// merged: reducing the last axis becomes [outer, n], a middle axis [outer, n, inner].
struct Layout {
  absl::InlinedVector<int64_t, 6> dims;
  absl::InlinedVector<bool, 6> reduced;
  absl::InlinedVector<int64_t, 6> out_strides;  // 0 on reduced axes
  int64_t in_numel = 1;
  int64_t out_numel = 1;
};

Layout MakeLayout(const ReduceParams& p) {
  Layout l;
  for (size_t a = 0; a < p.dims.size(); ++a) {
    l.in_numel *= p.dims[a];
    if (!p.reduced[a]) l.out_numel *= p.dims[a];
    if (p.dims[a] == 1) continue;
    if (!l.dims.empty() && l.reduced.back() == p.reduced[a]) {
      l.dims.back() *= p.dims[a];
    } else {
      l.dims.push_back(p.dims[a]);
      l.reduced.push_back(p.reduced[a]);
    }
  }
  if (l.dims.empty()) {
    l.dims.push_back(1);
    l.reduced.push_back(false);
  }
  l.out_strides.assign(l.dims.size(), 0);
  int64_t stride = 1;
  for (size_t a = l.dims.size(); a-- > 0;) {
    if (!l.reduced[a]) {
      l.out_strides[a] = stride;
      stride *= l.dims[a];
    }
  }
  return l;
}

/// Walks x in memory order and calls update(acc[o], x[i], o) with o the output index of i.
/// The innermost merged axis is a tight loop: into one accumulator when it is reduced, along
/// the accumulator row when it is kept.
template <typename T, typename Acc, typename Update>
void Accumulate(const Layout& l, const T* x, Acc* acc, Update update) {
  if (l.in_numel == 0) return;
  const int rank = static_cast<int>(l.dims.size());
  const int64_t n = l.dims.back();
  const bool inner_reduced = l.reduced.back();
  absl::InlinedVector<int64_t, 6> index(rank, 0);
  int64_t o = 0;
  for (int64_t base = 0; base < l.in_numel; base += n) {
    const T* px = x + base;
    if (inner_reduced) {
      Acc a = acc[o];
      for (int64_t i = 0; i < n; ++i) update(a, px[i], o);
      acc[o] = a;
    } else {
      for (int64_t i = 0; i < n; ++i) update(acc[o + i], px[i], o + i);
    }
    for (int d = rank - 2; d >= 0; --d) {
      o += l.out_strides[d];
      if (++index[d] < l.dims[d]) break;
      o -= l.out_strides[d] * l.dims[d];
      index[d] = 0;
    }
  }
}

/// Converts a finite-or-not double to T; integers get 0 for NaN and saturate at their range.
template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) {
      return std::numeric_limits<T>::lowest();
    }
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) {
      return std::numeric_limits<T>::max();
    }
    return static_cast<T>(v);
  }
}

/// Sums accumulate in double for floats and wrap in 64 bits for integers.
template <typename T>
using SumAcc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

template <typename T>
double SumToDouble(SumAcc<T> a) {
  if constexpr (std::is_signed_v<T> && std::is_integral_v<T>) {
    return static_cast<double>(static_cast<int64_t>(a));
  } else {
    return static_cast<double>(a);
  }
}

template <typename T>
void ReduceMaxMin(const Layout& l, bool is_max, const T* x, T* y) {
  using Lim = std::numeric_limits<T>;
  const T init = is_max ? (Lim::has_infinity ? -Lim::infinity() : Lim::lowest())
                        : (Lim::has_infinity ? Lim::infinity() : Lim::max());
  for (int64_t i = 0; i < l.out_numel; ++i) y[i] = init;
  if (is_max) {
    Accumulate(l, x, y, [](T& a, T v, int64_t) { a = (v > a || v != v) ? v : a; });
  } else {
    Accumulate(l, x, y, [](T& a, T v, int64_t) { a = (v < a || v != v) ? v : a; });
  }
}

/// Reductions built on a sum: Sum, Mean, L1, L2, LogSum, SumSquare, Prod (a product).
template <typename T>
void ReduceSumLike(const Layout& l, ReduceKind kind, const T* x, T* y) {
  using Acc = SumAcc<T>;
  std::vector<Acc> acc(l.out_numel, kind == ReduceKind::kProd ? Acc(1) : Acc(0));
  auto sq = [](T v) { return static_cast<Acc>(v) * static_cast<Acc>(v); };
  switch (kind) {
    case ReduceKind::kL1:
      Accumulate(l, x, acc.data(), [](Acc& a, T v, int64_t) {
        a += static_cast<Acc>(v < 0 ? -static_cast<Acc>(v) : static_cast<Acc>(v));
      });
      break;
    case ReduceKind::kL2:
    case ReduceKind::kSumSquare:
      Accumulate(l, x, acc.data(), [&](Acc& a, T v, int64_t) { a += sq(v); });
      break;
    case ReduceKind::kProd:
      Accumulate(l, x, acc.data(), [](Acc& a, T v, int64_t) { a *= static_cast<Acc>(v); });
      break;
    default:
      Accumulate(l, x, acc.data(), [](Acc& a, T v, int64_t) { a += static_cast<Acc>(v); });
      break;
  }
  const int64_t count = l.out_numel > 0 ? l.in_numel / l.out_numel : 0;
  for (int64_t i = 0; i < l.out_numel; ++i) {
    switch (kind) {
      case ReduceKind::kMean:
        if constexpr (std::is_integral_v<T>) {
          y[i] = count == 0 ? T(0) : FromDouble<T>(std::trunc(SumToDouble<T>(acc[i]) / count));
        } else {
          y[i] = static_cast<T>(acc[i] / static_cast<double>(count));
        }
        break;
      case ReduceKind::kL2:
        y[i] = FromDouble<T>(std::sqrt(SumToDouble<T>(acc[i])));
        break;
      case ReduceKind::kLogSum:
        y[i] = FromDouble<T>(std::log(SumToDouble<T>(acc[i])));
        break;
      default:
        y[i] = static_cast<T>(acc[i]);
        break;
    }
  }
}

/// m + log(sum exp(x - m)) with m the max, so exp never overflows.
template <typename T>
void ReduceLogSumExp(const Layout& l, const T* x, T* y) {
  std::vector<T> m(l.out_numel);
  ReduceMaxMin(l, /*is_max=*/true, x, m.data());
  std::vector<double> sum(l.out_numel, 0.0);
  const T* pm = m.data();
  Accumulate(l, x, sum.data(), [pm](double& a, T v, int64_t o) {
    a += std::exp(static_cast<double>(v) - static_cast<double>(pm[o]));
  });
  for (int64_t i = 0; i < l.out_numel; ++i) {
    // An empty set (sum 0) gives -inf; an all -inf set must not compute -inf - -inf.
    const double mi = static_cast<double>(m[i]);
    y[i] = FromDouble<T>(std::isinf(mi) ? mi : mi + std::log(sum[i]));
  }
}

}  // namespace

template <typename T>
void Reduce(const ReduceParams& p, const T* x, T* y) {
  const Layout l = MakeLayout(p);
  switch (p.kind) {
    case ReduceKind::kMax:
      return ReduceMaxMin(l, true, x, y);
    case ReduceKind::kMin:
      return ReduceMaxMin(l, false, x, y);
    case ReduceKind::kLogSumExp:
      return ReduceLogSumExp(l, x, y);
    case ReduceKind::kSum:
    case ReduceKind::kMean:
    case ReduceKind::kProd:
    case ReduceKind::kL1:
    case ReduceKind::kL2:
    case ReduceKind::kLogSum:
    case ReduceKind::kSumSquare:
      return ReduceSumLike(l, p.kind, x, y);
  }
}

template <typename T>
void ArgReduce(const ArgReduceParams& p, const T* x, int64_t* y) {
  for (int64_t o = 0; o < p.outer; ++o) {
    for (int64_t i = 0; i < p.inner; ++i) {
      const T* px = x + o * p.n * p.inner + i;
      T best = px[0];
      int64_t best_j = 0;
      for (int64_t j = 1; j < p.n; ++j) {
        const T v = px[j * p.inner];
        const bool better = p.is_max ? (p.select_last_index ? v >= best : v > best)
                                     : (p.select_last_index ? v <= best : v < best);
        if (better) {
          best = v;
          best_j = j;
        }
      }
      y[o * p.inner + i] = best_j;
    }
  }
}

#define QCC_INSTANTIATE_REDUCE(T)                             \
  template void Reduce<T>(const ReduceParams&, const T*, T*); \
  template void ArgReduce<T>(const ArgReduceParams&, const T*, int64_t*);
QCC_INSTANTIATE_REDUCE(float)
QCC_INSTANTIATE_REDUCE(double)
QCC_INSTANTIATE_REDUCE(int8_t)
QCC_INSTANTIATE_REDUCE(uint8_t)
QCC_INSTANTIATE_REDUCE(int16_t)
QCC_INSTANTIATE_REDUCE(uint16_t)
QCC_INSTANTIATE_REDUCE(int32_t)
QCC_INSTANTIATE_REDUCE(uint32_t)
QCC_INSTANTIATE_REDUCE(int64_t)
QCC_INSTANTIATE_REDUCE(uint64_t)
#undef QCC_INSTANTIATE_REDUCE

}  // namespace qcc::cpu
