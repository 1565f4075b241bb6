// Three builds of a hot float loop (AVX-512F, AVX2, the baseline x86-64) and a call that runs the
// widest one this CPU has, chosen once. The loops are plain C++ that GCC vectorizes for each
// target; with -ffp-contract=off every build does the same IEEE operations (an explicit FmaF32 is
// one operation in each), so the results do not depend on the CPU. The AVX2 build also has FMA.
// Explicit dispatch rather than target_clones: the ifunc resolvers target_clones makes run before
// the sanitizer runtimes start, and crash ThreadSanitizer builds.
#ifndef QCC_KERNELS_CPU_SIMD_DISPATCH_H_
#define QCC_KERNELS_CPU_SIMD_DISPATCH_H_

#include "kernels/cpu/cpu_features.h"

namespace qcc::cpu {

enum class SimdLevel { kBaseline, kAvx2, kAvx512 };

/// The widest of the three this CPU runs (cpu_features.h).
inline SimdLevel CpuSimdLevel() {
  static const SimdLevel level = Cpu().avx512f             ? SimdLevel::kAvx512
                                 : Cpu().avx2 && Cpu().fma ? SimdLevel::kAvx2
                                                           : SimdLevel::kBaseline;
  return level;
}

}  // namespace qcc::cpu

/// Defines `ret name params` that runs `name##Body args` (an always_inline function defined
/// before) built for the widest SIMD level of this CPU. A file whose loops select on float
/// compares starts with `#pragma GCC optimize("no-trapping-math")` (before its includes, so
/// every function it inlines has the same options), or the selects do not vectorize.
#define QCC_SIMD_VARIANTS(ret, name, params, args)                                       \
  __attribute__((target("avx512f"))) ret name##Avx512 params { return name##Body args; } \
  __attribute__((target("avx2,fma"))) ret name##Avx2 params { return name##Body args; }  \
  ret name##Baseline params { return name##Body args; }                                  \
  ret name params {                                                                      \
    switch (::qcc::cpu::CpuSimdLevel()) {                                                \
      case ::qcc::cpu::SimdLevel::kAvx512:                                               \
        return name##Avx512 args;                                                        \
      case ::qcc::cpu::SimdLevel::kAvx2:                                                 \
        return name##Avx2 args;                                                          \
      case ::qcc::cpu::SimdLevel::kBaseline:                                             \
        break;                                                                           \
    }                                                                                    \
    return name##Baseline args;                                                          \
  }

#endif  // QCC_KERNELS_CPU_SIMD_DISPATCH_H_
