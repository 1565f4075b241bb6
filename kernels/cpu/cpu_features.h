// What this CPU runs, detected once: the one table every kernel dispatch reads (the fp32 and int8
// fast paths, the SIMD builds of simd_dispatch.h). QCC_CPU_FEATURES caps it for testing the
// narrower paths on a wider CPU: "baseline" (x86-64 only), "avx2" (AVX2, FMA, BMI2, F16C), "avx512"
// (no VNNI/VBMI), "vnni" (all of AVX-512 but AMX); unset or "native" is what the CPU has. The int8
// kernels and the SIMD builds give the same bits on every path, so an int8 plan's outputs do not
// depend on it (tests/cpu_paths/cpu_paths.py checks that end to end). The fp32 convolution's
// AVX-512 and AVX2 microkernels sum in one order (one fused multiply-add per k); the baseline path
// (im2col + sgemm) sums in another.
#ifndef QCC_KERNELS_CPU_CPU_FEATURES_H_
#define QCC_KERNELS_CPU_CPU_FEATURES_H_

namespace qcc::cpu {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool bmi2 = false;
  bool f16c = false;  // vcvtps2ph / vcvtph2ps
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512vbmi = false;
  bool avx512vbmi2 = false;
  /// AMX-TILE and AMX-INT8, with the kernel's permission for this process to use the tile
  /// state (Linux arch_prctl ARCH_REQ_XCOMP_PERM, asked for once at detection).
  bool amx_int8 = false;

  /// AVX-512 F, BW and VL: the int8 elementwise kernels' set.
  bool avx512_int8() const { return avx512f && avx512bw && avx512vl; }
  /// That and VNNI: vpdpbusd.
  bool avx512_vnni() const { return avx512_int8() && avx512vnni; }
  /// That and AMX: the int8 tile multiplies.
  bool avx512_amx() const { return avx512_vnni() && avx512vbmi && avx512vbmi2 && amx_int8; }
};

/// This CPU's features, capped by QCC_CPU_FEATURES (read once, at the first call; an unknown
/// value is treated as "native" and reported on stderr once).
const CpuFeatures& Cpu();

/// Leaves the vector registers clean after AVX-512 code: zeroes zmm16 to zmm31, which
/// vzeroupper (and the vzeroupper GCC puts at the end of AVX functions) leaves alone, then runs
/// vzeroupper. A kernel whose registers spill into zmm16+ otherwise leaves the core in the
/// "dirty upper" state, where every legacy-SSE instruction (code built for baseline x86-64)
/// waits on a merge: squeezenet1.1's GlobalAveragePool took 0.17 ms instead of 0.027 after a
/// convolution that used them. NnParallelFor calls it after every piece; a no-op without
/// AVX-512F.
void CleanUpperVectorState();

}  // namespace qcc::cpu

#endif  // QCC_KERNELS_CPU_CPU_FEATURES_H_
