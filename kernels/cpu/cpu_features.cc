#include "kernels/cpu/cpu_features.h"

#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace qcc::cpu {
namespace {

/// CPUID leaf 7 reports AMX-TILE and AMX-INT8 (EDX bits 24, 25) and Linux grants this process
/// the tile data state (XFEATURE 18); without the grant the first tile instruction faults.
bool AmxUsable() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  if ((edx & (1u << 24)) == 0 || (edx & (1u << 25)) == 0) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

CpuFeatures Detect() {
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.bmi2 = __builtin_cpu_supports("bmi2");
  // Clang's __builtin_cpu_supports has no "f16c": CPUID leaf 1, ECX bit 29.
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  f.f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512vbmi = __builtin_cpu_supports("avx512vbmi");
  f.avx512vbmi2 = __builtin_cpu_supports("avx512vbmi2");
  f.amx_int8 = AmxUsable();
  return f;
}

/// `f` without what the QCC_CPU_FEATURES value `cap` rules out.
CpuFeatures Capped(CpuFeatures f, const char* cap) {
  if (cap == nullptr || std::strcmp(cap, "native") == 0) return f;
  const bool baseline = std::strcmp(cap, "baseline") == 0;
  const bool avx2 = std::strcmp(cap, "avx2") == 0;
  const bool avx512 = std::strcmp(cap, "avx512") == 0;
  const bool vnni = std::strcmp(cap, "vnni") == 0;
  if (!baseline && !avx2 && !avx512 && !vnni) {
    std::fprintf(stderr,
                 "qcc: QCC_CPU_FEATURES='%s' is not baseline, avx2, avx512, vnni or native; "
                 "using native\n",
                 cap);
    return f;
  }
  f.amx_int8 = false;
  if (vnni) return f;
  f.avx512vnni = f.avx512vbmi = f.avx512vbmi2 = false;
  if (avx512) return f;
  f.avx512f = f.avx512bw = f.avx512vl = false;
  if (avx2) return f;
  f.avx2 = f.fma = f.bmi2 = f.f16c = false;
  return f;
}

}  // namespace

const CpuFeatures& Cpu() {
  static const CpuFeatures features = Capped(Detect(), std::getenv("QCC_CPU_FEATURES"));
  return features;
}

#if defined(__x86_64__) && defined(__GNUC__)
namespace {
__attribute__((target("avx512f"))) void ZeroHighZmmAndUpperHalves() {
  asm volatile(
      "vpxord %%zmm16, %%zmm16, %%zmm16\n\t"
      "vpxord %%zmm17, %%zmm17, %%zmm17\n\t"
      "vpxord %%zmm18, %%zmm18, %%zmm18\n\t"
      "vpxord %%zmm19, %%zmm19, %%zmm19\n\t"
      "vpxord %%zmm20, %%zmm20, %%zmm20\n\t"
      "vpxord %%zmm21, %%zmm21, %%zmm21\n\t"
      "vpxord %%zmm22, %%zmm22, %%zmm22\n\t"
      "vpxord %%zmm23, %%zmm23, %%zmm23\n\t"
      "vpxord %%zmm24, %%zmm24, %%zmm24\n\t"
      "vpxord %%zmm25, %%zmm25, %%zmm25\n\t"
      "vpxord %%zmm26, %%zmm26, %%zmm26\n\t"
      "vpxord %%zmm27, %%zmm27, %%zmm27\n\t"
      "vpxord %%zmm28, %%zmm28, %%zmm28\n\t"
      "vpxord %%zmm29, %%zmm29, %%zmm29\n\t"
      "vpxord %%zmm30, %%zmm30, %%zmm30\n\t"
      "vpxord %%zmm31, %%zmm31, %%zmm31\n\t"
      "vzeroupper" ::
          : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
            "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19",
            "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27", "xmm28",
            "xmm29", "xmm30", "xmm31");
}
}  // namespace

void CleanUpperVectorState() {
  static const bool avx512 = Cpu().avx512f;
  if (avx512) ZeroHighZmmAndUpperHalves();
}
#else
void CleanUpperVectorState() {}
#endif

}  // namespace qcc::cpu
