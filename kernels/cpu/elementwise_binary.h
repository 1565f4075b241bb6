// Broadcasting binary and ternary elementwise kernels, and the scalar functors of the binary
// ops (arithmetic, comparison, logic). Templates over the element type; the functors define
// the integer corner cases (division by zero, INT_MIN / -1) so no input can trap.
#ifndef QCC_KERNELS_CPU_ELEMENTWISE_BINARY_H_
#define QCC_KERNELS_CPU_ELEMENTWISE_BINARY_H_

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/cpu/broadcast.h"

namespace qcc::cpu {

// The kernels split large outputs over up to `num_threads` threads (ParallelForEachBroadcastRun);
// every element is computed the same way at any thread count.

/// out[i] = op(a[ia], b[ib]) over a two-operand plan; `a` (or `b`) and `out` may alias when
/// that operand spans the whole output (the in-place fold of the variadic ops).
template <typename A, typename B, typename R, typename Op>
void BinaryBroadcast(const BroadcastPlan& plan, const A* a, const B* b, R* out, Op op,
                     int num_threads = 1) {
  const bool a_runs = plan.inner_stride(0) != 0;
  const bool b_runs = plan.inner_stride(1) != 0;
  ParallelForEachBroadcastRun(plan, num_threads, [&](const int64_t* off, int64_t o, int64_t n) {
    const A* pa = a + off[0];
    const B* pb = b + off[1];
    R* po = out + o;
    if (a_runs && b_runs) {
      for (int64_t i = 0; i < n; ++i) po[i] = op(pa[i], pb[i]);
    } else if (a_runs) {
      const B vb = *pb;
      for (int64_t i = 0; i < n; ++i) po[i] = op(pa[i], vb);
    } else if (b_runs) {
      const A va = *pa;
      for (int64_t i = 0; i < n; ++i) po[i] = op(va, pb[i]);
    } else {
      const R v = op(*pa, *pb);
      for (int64_t i = 0; i < n; ++i) po[i] = v;
    }
  });
}

/// out[i] = cond[ic] ? x[ix] : y[iy] over a three-operand plan; T is any type of the element's
/// size (the kernel only moves bytes).
template <typename T>
void SelectBroadcast(const BroadcastPlan& plan, const uint8_t* cond, const T* x, const T* y, T* out,
                     int num_threads = 1) {
  const int64_t sc = plan.inner_stride(0), sx = plan.inner_stride(1), sy = plan.inner_stride(2);
  ParallelForEachBroadcastRun(plan, num_threads, [&](const int64_t* off, int64_t o, int64_t n) {
    const uint8_t* pc = cond + off[0];
    const T* px = x + off[1];
    const T* py = y + off[2];
    T* po = out + o;
    for (int64_t i = 0; i < n; ++i) po[i] = pc[i * sc] ? px[i * sx] : py[i * sy];
  });
}

/// Copies `in` broadcast to the plan's output (a one-operand plan).
template <typename T>
void BroadcastCopy(const BroadcastPlan& plan, const T* in, T* out, int num_threads = 1) {
  const bool runs = plan.inner_stride(0) != 0;
  ParallelForEachBroadcastRun(plan, num_threads, [&](const int64_t* off, int64_t o, int64_t n) {
    const T* p = in + off[0];
    if (runs) {
      for (int64_t i = 0; i < n; ++i) out[o + i] = p[i];
    } else {
      for (int64_t i = 0; i < n; ++i) out[o + i] = *p;
    }
  });
}

// Scalar functors. For integers, x / 0 and x % 0 give 0 and INT_MIN / -1 wraps, where C would
// trap; ONNX leaves those cases undefined.

/// Integer arithmetic wraps (computed unsigned, at least as wide as int) instead of overflowing.
template <typename T>
using WrapType =
    std::conditional_t<std::is_integral_v<T>, std::make_unsigned<std::common_type_t<T, int>>,
                       std::common_type<T>>;

struct AddFn {
  template <typename T>
  T operator()(T a, T b) const {
    using U = typename WrapType<T>::type;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  }
};
struct SubFn {
  template <typename T>
  T operator()(T a, T b) const {
    using U = typename WrapType<T>::type;
    return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
  }
};
struct MulFn {
  template <typename T>
  T operator()(T a, T b) const {
    using U = typename WrapType<T>::type;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  }
};
struct DivFn {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return static_cast<T>(0 - static_cast<std::make_unsigned_t<T>>(a));
      }
      return static_cast<T>(a / b);  // truncates toward zero, as C does
    } else {
      return a / b;
    }
  }
};
/// ONNX Mod with fmod = 1: the remainder takes the dividend's sign (C fmod / C %).
struct FmodFn {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      if (b == 0) return 0;
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return 0;
      }
      return static_cast<T>(a % b);
    } else {
      return std::fmod(a, b);
    }
  }
};
/// ONNX Mod with fmod = 0: the remainder takes the divisor's sign (Python / numpy mod).
struct ModFn {
  template <typename T>
  T operator()(T a, T b) const {
    T r = FmodFn()(a, b);
    if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>) {
      if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    }
    return r;
  }
};
/// Min and Max propagate NaN, as numpy's minimum/maximum do.
struct MinFn {
  template <typename T>
  T operator()(T a, T b) const {
    return (a < b || a != a) ? a : b;
  }
};
struct MaxFn {
  template <typename T>
  T operator()(T a, T b) const {
    return (a > b || a != a) ? a : b;
  }
};
/// PRelu: x where x >= 0, else slope * x.
struct PReluFn {
  template <typename T>
  T operator()(T x, T slope) const {
    return x < 0 ? static_cast<T>(slope * x) : x;
  }
};

/// Pow of a floating base by an exponent of the same type.
struct PowFloatFn {
  template <typename T>
  T operator()(T a, T b) const {
    return std::pow(a, b);
  }
};
/// Pow of an integer base by an int64 exponent, exact by repeated squaring (wrapping on
/// overflow); a negative exponent gives the truncated 1 / a^-b.
struct PowIntFn {
  template <typename T>
  T operator()(T a, int64_t e) const {
    using U = typename WrapType<T>::type;
    if (e < 0) {
      if (a == 1) return 1;
      if constexpr (std::is_signed_v<T>) {
        if (a == -1) return (e % 2 == 0) ? 1 : -1;
      }
      return 0;
    }
    U result = 1, base = static_cast<U>(a);
    for (; e > 0; e >>= 1) {
      if (e & 1) result = static_cast<U>(result * base);
      base = static_cast<U>(base * base);
    }
    return static_cast<T>(result);
  }
};
/// Pow of an integer base by a floating exponent, computed in double and truncated.
struct PowIntByFloatFn {
  template <typename T>
  T operator()(T a, double e) const {
    const double r = std::pow(static_cast<double>(a), e);
    if (!(r >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
          r <= static_cast<double>(std::numeric_limits<T>::max()))) {
      return 0;
    }
    return static_cast<T>(r);
  }
};

// Comparisons and logic write bool as uint8_t 0 / 1.
struct EqualFn {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a == b;
  }
};
struct LessFn {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a < b;
  }
};
struct LessOrEqualFn {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterFn {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterOrEqualFn {
  template <typename T>
  uint8_t operator()(T a, T b) const {
    return a >= b;
  }
};
struct AndFn {
  uint8_t operator()(uint8_t a, uint8_t b) const { return (a != 0) & (b != 0); }
};
struct OrFn {
  uint8_t operator()(uint8_t a, uint8_t b) const { return (a != 0) | (b != 0); }
};
struct XorFn {
  uint8_t operator()(uint8_t a, uint8_t b) const { return (a != 0) ^ (b != 0); }
};

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_ELEMENTWISE_BINARY_H_
